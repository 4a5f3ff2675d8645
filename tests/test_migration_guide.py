"""migration_guide.md's tables are what TensorFlow does today: regenerated from a run and compared."""

import importlib.util
from pathlib import Path

TOOL = Path(__file__).resolve().parent.parent / "tools" / "gen_migration_guide.py"


def _tool():
    spec = importlib.util.spec_from_file_location("gen_migration_guide", TOOL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_guide_tables_match_a_fresh_run():
    tool = _tool()
    text = tool.GUIDE.read_text(encoding="utf-8")
    assert text.count("<!-- table:") >= 2
    assert tool.regenerate(text) == text, "stale tables: run `python tools/gen_migration_guide.py`"


def test_guide_claims_hold_in_its_tables():
    text = _tool().GUIDE.read_text(encoding="utf-8")
    seed_rows = {line.split("|")[1].strip(): line for line in text.splitlines() if line.startswith("| `")}
    assert "not called" in seed_rows["`weighted`"]  # the override is ignored under tapes
    assert "unsupported" in seed_rows["`second_order`"]  # Defun grad_func has no second order
