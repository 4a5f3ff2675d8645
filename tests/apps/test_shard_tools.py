"""compat-rewrite --verify and compat-verify as shards: merged by compat-merge into the whole run's reports, exactly."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from compat.reports.merged_tools import check_tool_report
from compat.reports.timings import without_timings

pytestmark = pytest.mark.slow  # a whole-system run: `pytest --runslow` (CI) runs it

ROOT = Path(__file__).resolve().parents[2]
LEGACY = ROOT / "tests" / "data" / "legacy"
FIXTURES = ("sign_ste.py", "round_ste.py", "grad_reverse.py")
REGISTERING = '''
    """Registers the quantizer's gradient (a map in model_q.py uses it: a tree-wide fact)."""
    import tensorflow as tf


    @tf.RegisterGradient("ClippedGrad_q")
    def _clipped_grad(op, grad):
        return grad * tf.cast(tf.abs(op.inputs[0]) < 2.0, grad.dtype)
    '''
USING = '''
    """Quantizes with it."""
    import tensorflow as tf

    import clipped_ops_q  # noqa: F401  (registers ClippedGrad_q)


    def quantize(x):
        with tf.get_default_graph().gradient_override_map({"Round": "ClippedGrad_q"}):
            return tf.round(x * 2.0)
    '''
VERIFY_FLAGS = ("--verify", "--scenarios=sum", "--entries=quantize:float32[6]")


def _run(module: str, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TF_CPP_MIN_LOG_LEVEL": "3"}
    return subprocess.run([sys.executable, "-m", module, *args], capture_output=True, text=True, cwd=cwd, env=env,
                          timeout=900)


@pytest.fixture(name="tree", scope="module")
def tree_fixture(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three legacy fixture files, and a gradient registered in one module and used by a map in another."""
    folder = tmp_path_factory.mktemp("shard-tree")
    for name in FIXTURES:
        shutil.copy(LEGACY / name, folder / name)
    (folder / "clipped_ops_q.py").write_text(textwrap.dedent(REGISTERING).lstrip(), encoding="utf-8")
    (folder / "model_q.py").write_text(textwrap.dedent(USING).lstrip(), encoding="utf-8")
    return folder


def _rewrite_shards(tree: Path, count: int, *flags: str, prefix: str = "rewrite") -> list[str]:
    names = []
    for index in range(1, count + 1):
        done = _run("compat.apps.rewrite", *flags, "--format=json", f"--shard={index}/{count}", ".", cwd=tree)
        assert done.returncode != 2, done.stderr
        name = f"{prefix}-{index}of{count}.json"
        (tree.parent / name).write_text(done.stdout, encoding="utf-8")
        names.append(str(tree.parent / name))
    return names


@pytest.fixture(name="rewrite_runs", scope="module")
def rewrite_runs_fixture(tree: Path) -> dict[str, Any]:
    """compat-rewrite --verify over the tree whole (JSON and text) and as 3 shards (JSON)."""
    whole_json = _run("compat.apps.rewrite", *VERIFY_FLAGS, "--format=json", ".", cwd=tree)
    whole_text = _run("compat.apps.rewrite", *VERIFY_FLAGS, ".", cwd=tree)
    return {"json": whole_json, "text": whole_text, "shards": _rewrite_shards(tree, 3, *VERIFY_FLAGS)}


def test_rewrite_verify_shards_merge_into_the_whole_runs_json_and_text(rewrite_runs: dict[str, Any],
                                                                       tree: Path) -> None:
    whole = json.loads(rewrite_runs["json"].stdout)
    files = {f["path"]: f for f in whole["files"]}
    assert "registered in" in files["model_q.py"]["sites"][0]["reason"], "the tree-wide fact must be found"
    assert len(whole["verify"]) >= 3 and whole["run"]["fingerprint"]
    assert all(isinstance(report, dict) and report["cells"] for report in whole["verify"].values())  # not a repr
    shards = [json.loads(Path(name).read_text(encoding="utf-8")) for name in rewrite_runs["shards"]]
    assert [len(s["files"]) for s in shards] == [2, 2, 1] and [s["shard"]["index"] for s in shards] == [1, 2, 3]
    assert {s["version"] for s in shards} == {whole["version"]}
    merged = _run("compat.apps.merge", "--format=json", *rewrite_runs["shards"], cwd=tree)
    assert merged.returncode == rewrite_runs["json"].returncode, merged.stderr
    for document in [whole, *shards, json.loads(merged.stdout)]:
        check_tool_report("report", document)  # compat/reports/rewrite_report.schema.json
    assert without_timings(json.loads(merged.stdout)) == without_timings(whole)
    text = _run("compat.apps.merge", *rewrite_runs["shards"], cwd=tree)
    assert text.returncode == rewrite_runs["text"].returncode
    assert (text.stdout, text.stderr) == (rewrite_runs["text"].stdout, rewrite_runs["text"].stderr)


def test_a_shard_without_verify_rewrites_in_place_only_its_files_with_the_whole_trees_facts(tree: Path,
                                                                                          tmp_path: Path) -> None:
    copy = tmp_path / "tree"
    shutil.copytree(tree, copy)
    whole = json.loads(_run("compat.apps.rewrite", "--format=json", ".", cwd=copy).stdout)
    done = _run("compat.apps.rewrite", "--in-place", "--format=json", "--shard=3/3", ".", cwd=copy)
    shard = json.loads(done.stdout)
    assert shard["shard"]["files"] == ["clipped_ops_q.py", "grad_reverse.py", "model_q.py", "round_ste.py",
                                       "sign_ste.py"]  # the walk's order: file i goes to shard i mod 3
    assert [f["path"] for f in shard["files"]] == ["model_q.py"]
    in_whole = next(f for f in whole["files"] if f["path"] == "model_q.py")
    assert shard["files"] == [{**in_whole, "written": True}]  # the whole run's outcome, written in place
    for name in ("clipped_ops_q.py", "grad_reverse.py", "round_ste.py", "sign_ste.py"):
        assert (copy / name).read_text(encoding="utf-8") == (tree / name).read_text(encoding="utf-8")
    assert "registered in clipped_ops_q.py" in in_whole["sites"][0]["reason"], in_whole
    assert "gradient_override_map" not in (copy / "model_q.py").read_text(encoding="utf-8")


@pytest.fixture(name="plain_shards", scope="module")
def plain_shards_fixture(tree: Path) -> list[str]:
    """The tree as 2 shards, without --verify (cheap), for the merge's refusals."""
    return _rewrite_shards(tree, 2, prefix="plain")


@pytest.mark.parametrize("case", ["missing", "duplicated", "other_n", "other_flags"])
def test_merge_refuses_shards_that_are_not_one_whole_run_naming_the_file(case: str, tree: Path,
                                                                         plain_shards: list[str]) -> None:
    first, second = plain_shards
    if case == "missing":
        given, expected = [first], "shard 2/2 is missing"
    elif case == "duplicated":
        given, expected = [first, first, second], "are both shard 1/2: pass each shard once"
    elif case == "other_n":
        given, expected = [first, *_rewrite_shards(tree, 3, prefix="three")[1:2]], "shards of one run share N"
    else:
        other = _rewrite_shards(tree, 2, "--exclude=round_ste.py", prefix="excluding")[1]
        given, expected = [first, other], "its flags"
    done = _run("compat.apps.merge", *given, cwd=tree)
    assert done.returncode == 2, done.stderr
    named = given[1] if case == "duplicated" else given[-1]  # the repeated shard; else the odd one out
    assert expected in done.stderr and str(named) in done.stderr, done.stderr
    if case == "missing":
        assert "compat-rewrite --shard=2/2 --format=json" in done.stderr


@pytest.mark.parametrize("fmt", ["markdown", "html"])
def test_tool_shards_merge_only_to_text_or_json_naming_the_tool_and_the_flag(fmt: str, tree: Path,
                                                                             plain_shards: list[str]) -> None:
    done = _run("compat.apps.merge", f"--format={fmt}", *plain_shards, cwd=tree)
    assert done.returncode == 2, done.stderr
    assert f"--format={fmt}: compat-rewrite reports merge to text (--format=table) or json" in done.stderr
    assert not done.stdout


def test_verify_shards_split_by_context_and_merge_into_the_whole_runs_reports(tree: Path) -> None:
    rewritten = tree.parent / "rewritten" / "sign_ste.py"
    rewritten.parent.mkdir(exist_ok=True)
    rewritten.write_text(_rewritten_source(tree / "sign_ste.py"), encoding="utf-8")
    flags = ("--scenarios=sum", "--contexts=v1_session,eager_tape", str(tree / "sign_ste.py"), str(rewritten))
    whole_json = _run("compat.apps.verify", "--format=json", *flags, cwd=tree)
    whole_text = _run("compat.apps.verify", *flags, cwd=tree)
    shards = []
    for index in (1, 2):
        shard = _run("compat.apps.verify", "--format=json", f"--shard={index}/2", *flags, cwd=tree)
        shards.append(tree.parent / f"verify-{index}of2.json")
        shards[-1].write_text(shard.stdout, encoding="utf-8")
    documents = [json.loads(path.read_text(encoding="utf-8")) for path in shards]
    assert [d["contexts"] for d in documents] == [["v1_session"], ["eager_tape"]]
    merged = _run("compat.apps.merge", "--format=json", *map(str, shards), cwd=tree)
    assert merged.returncode == whole_json.returncode == 0, merged.stderr
    for document in [*documents, json.loads(merged.stdout), json.loads(whole_json.stdout)]:
        check_tool_report("report", document)  # compat/reports/verify_report.schema.json
    assert without_timings(json.loads(merged.stdout)) == without_timings(json.loads(whole_json.stdout))
    text = _run("compat.apps.merge", *map(str, shards), cwd=tree)
    assert (text.returncode, text.stdout) == (whole_text.returncode, whole_text.stdout)
    missing = _run("compat.apps.merge", str(shards[1]), cwd=tree)
    assert missing.returncode == 2 and "shard 1/2 is missing" in missing.stderr, missing.stderr
    too_many = _run("compat.apps.verify", "--shard=3/3", *flags, cwd=tree)
    assert too_many.returncode == 2 and "give N <= 2" in too_many.stderr, too_many.stderr


def _rewritten_source(path: Path) -> str:
    from compat.rewrite import rewrite_file

    return rewrite_file(str(path)).rewritten
