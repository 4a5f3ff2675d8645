"""migration_guide.md says what TensorFlow does on the installed release: every table, sentence and block
output is regenerated from a run and compared, character for character."""

import ast
import importlib.util
import re
from pathlib import Path

import pytest
import tensorflow as tf

ROOT = Path(__file__).resolve().parent.parent
TOOL = ROOT / "tools" / "gen_migration_guide.py"


def _tool():
    spec = importlib.util.spec_from_file_location("gen_migration_guide", TOOL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(name="guide", scope="module")
def guide_fixture():
    return _tool().GUIDE.read_text(encoding="utf-8")


@pytest.fixture(name="fresh", scope="module")
def fresh_fixture(guide):
    """The guide regenerated on this TensorFlow: the check run, and every Python block run (about a minute)."""
    return _tool().regenerate(guide)


_MEASURED_ON = re.compile(r"<!-- generated: \w+ -->\n\|[^\n]*\(TensorFlow (\d+\.\d+)\) \|\n.*?<!-- /generated -->",
                          re.DOTALL)


def _comparable(text: str, guide: str) -> str:
    """`text` as compared on this release: where the guide's tables name another release they were measured on,
    every such table is left out (they hold for their release, checked when the suite runs there); everything
    else, every sentence included, must hold here too."""
    installed = ".".join(tf.__version__.split(".")[:2])
    if set(_MEASURED_ON.findall(guide)) <= {installed}:
        return text
    return _MEASURED_ON.sub("(a table measured on another release)", text)


def test_every_fact_in_the_guide_holds_on_this_release(guide, fresh):
    assert _comparable(fresh, guide) == _comparable(guide, guide), (
        "migration_guide.md differs from a run on this TensorFlow: if the release changed a fact, make the generator "
        "say so per release; else run tools/gen_migration_guide.py")


def test_every_python_block_ran_and_shows_its_output(guide):
    tool = _tool()
    assert len(tool.blocks(guide)) >= 10
    assert guide.count("```python") == len(tool.blocks(guide)) == guide.count("<!-- output -->")


def test_the_seed_example_is_reproduced_verbatim(guide):
    seed = ROOT / "tests" / "data" / "seed_question.zh.txt"  # the question as the issue quotes it
    codes = dict((name, code) for name, code in _tool().blocks(guide) if name)
    assert "tf.get_default_graph()" in codes["seed"]
    assert codes["seed_fixed"] == codes["seed"].replace("tf.get_default_graph()", "tf.compat.v1.get_default_graph()")
    assert codes["seed"].strip() in seed.read_text(encoding="utf-8")


def test_every_table_fits_120_characters(guide):
    wide = [line for line in guide.splitlines() if line.startswith("|") and len(line) > 120]
    assert not wide, f"{len(wide)} table lines over 120 characters, e.g. {wide[0][:80]!r}"


def test_the_guide_names_the_releases_it_was_checked_on(guide):
    block = re.search(r"<!-- generated: releases -->\n(.*?)<!-- /generated -->", guide, re.DOTALL)[1]
    checked = re.findall(r"\b(2\.\d+) \(2\.\d+\.\d+\)", block)
    tree = ast.parse((ROOT / "noxfile.py").read_text(encoding="utf-8"))
    supported = next(ast.literal_eval(node.value) for node in tree.body if isinstance(node, ast.Assign)
                     and getattr(node.targets[0], "id", "") == "TF_VERSIONS")
    assert checked and set(checked) <= set(supported), "regenerate with --matrix=reports/matrix.json"
    assert {supported[0], supported[-1]} <= set(checked), "check the oldest and the newest release"
