"""rewrite_source at size: a module of many units of legacy code rewrites each unit as that unit alone does."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from compat.rewrite import engine, partial, rewrite_source

_BENCHMARK = Path(__file__).resolve().parents[2] / "benchmarks" / "rewrite_speed.py"
_MARK = "# -- unit "
_UNITS = 16


def _benchmark() -> ModuleType:
    """benchmarks/rewrite_speed.py, whose legacy units the benchmark times (the same code, checked here)."""
    name = "_gradcompat_rewrite_speed"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, _BENCHMARK)
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def _sites(result) -> list[tuple[str, str, str]]:
    return [(s.pattern, s.outcome, s.reason) for s in result.sites]


def test_many_units_rewrite_as_each_unit_alone() -> None:
    bench = _benchmark()
    whole = rewrite_source(bench.HEADER + "".join(bench.unit(i) for i in range(_UNITS)))
    parts = whole.text.split(_MARK)
    assert len(parts) == _UNITS + 1
    expected_sites = []
    for i in range(_UNITS):
        alone = rewrite_source(bench.HEADER + bench.unit(i))
        head, body = alone.text.split(_MARK)
        assert parts[0] == head, "the imports and shared helpers differ"
        # The blank lines before the next unit's mark end a unit inside the module, not alone.
        assert parts[i + 1].rstrip("\n") == body.rstrip("\n"), f"unit {i} is rewritten differently in the module"
        expected_sites += _sites(alone)
    assert _sites(whole) == expected_sites
    outcomes = {outcome for _, outcome, _ in expected_sites}
    assert outcomes == {"rewritten", "todo"}  # both kinds of site are exercised at size


def test_applying_only_the_edited_paths_changes_nothing(runner, corpus_name: str,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """The plan applied to every node of the tree, as before, gives the same code as applied to edited paths only."""
    source = (runner.LEGACY / f"{corpus_name}.py").read_text(encoding="utf-8")
    pruned = rewrite_source(source)
    monkeypatch.setattr(engine, "apply_plan", lambda module, plan, _open_ids: partial.apply_plan(module, plan, None))
    assert rewrite_source(source) == pruned
