"""benchmarks/rewrite_real.py on three corpus files: a report consistent with itself, and its exit codes."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from compat.rewrite import PATTERNS

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "benchmarks" / "rewrite_real.py"
CORPUS = REPO / "tests" / "data" / "real"
# A gradient reversal layer it rewrites, a custom-op gradient it keeps (the op's C++ source and loader are in the
# corpus, placed beside it in the repository's checkout), a Python 2 file no parser takes.
FILES = ("pumpikano__tf-dann/flip_gradient.py", "yuxng__PoseCNN/lib__triplet_loss__triplet_loss_op_grad.py",
         "WXinlong__ASIS/tf_ops__grouping__tf_grouping.py")
CONTEXT = ("yuxng__PoseCNN/lib__triplet_loss__triplet_loss_op.cc",
           "yuxng__PoseCNN/lib__triplet_loss__triplet_loss_op.py")


def _run(*args):
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, env=env, timeout=900)


@pytest.fixture(scope="module")
def small_corpus(tmp_path_factory):
    """The three files with their manifest entries, as a corpus of their own."""
    if not all((CORPUS / name).is_file() for name in FILES + CONTEXT):
        pytest.skip("the corpus files are not on disk (never committed): see tests/data/real/README.md")
    corpus = tmp_path_factory.mktemp("corpus")
    entries = [e for e in json.loads((CORPUS / "MANIFEST.json").read_text())["files"]
               if e["stored_as"] in FILES + CONTEXT]
    for entry in entries:
        (corpus / entry["stored_as"]).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(CORPUS / entry["stored_as"], corpus / entry["stored_as"])
    (corpus / "MANIFEST.json").write_text(json.dumps({"files": entries}))
    return corpus


def test_the_report_adds_up_and_a_missed_target_exits_1(small_corpus, tmp_path):
    done = _run(f"--corpus={small_corpus}", f"--json={tmp_path / 'report.json'}", "--jobs=2")
    report = json.loads((tmp_path / "report.json").read_text())
    assert done.returncode == report["exit_code"] == 1, done.stdout + done.stderr  # 3 files: the corpus target
    assert done.stdout.rstrip().endswith("result: FAIL") and "load average" in done.stdout
    totals, files = report["totals"], {f["stored_as"]: f for f in report["files"]}
    assert set(files) == set(FILES) and totals["files"] == 3 and totals["repositories"] == 3  # context: no report
    [kept] = files["yuxng__PoseCNN/lib__triplet_loss__triplet_loss_op_grad.py"]["sites"]
    assert kept["outcome"] == "kept" and "REGISTER_OP('Triplet')" in kept["reason"]
    parsed = [f for f in files.values() if f["unparsed"] is None]
    assert totals["sites"] == sum(len(f["audit_sites"]) for f in parsed) > 0
    assert sum(totals["outcomes"].values()) == sum(len(f["sites"]) for f in parsed)
    assert set(totals["outcomes"]) == set(report["outcomes"]) and "rewritten" in report["outcomes"]
    done_sites = sum(n for name, n in totals["outcomes"].items() if name in ("rewritten", "kept"))
    assert totals["rate"] == pytest.approx(done_sites / totals["sites"])
    for f in parsed:  # every site the audit found is a rewriter site or a listed defect
        found = {(PATTERNS[s["pattern"]], s["line"]) for s in f["sites"]}
        assert {tuple(s) for s in f["audit_sites"]} - found == {tuple(d) for d in f["defects"]}
        assert {s["status"] for s in f["imports"].values()} <= {"ok", "dependency_missing", "own_package_missing",
                                                                "op_library_missing", "fails_as_original",
                                                                "failed", "timeout"}
        assert set(f["imports"]) == {"original", "rewritten"}
    unparsed = [f for f in files.values() if f["unparsed"]]
    assert len(unparsed) == totals["unparsed_files"] == 1 and unparsed[0]["legacy_names"] > 0
    assert sum(c["count"] for c in report["todo_categories"]) == sum(
        1 for f in parsed for s in f["sites"] if s["outcome"] not in ("rewritten", "kept"))
    assert (report["exit_code"] == 0) == all(t["met"] for t in report["targets"])
    assert sum(totals["imports"]["rewritten"].values()) == len(parsed)


def test_usage_errors_exit_2(small_corpus, tmp_path):
    nothing = _run(f"--corpus={small_corpus}", "--files=no_such_repo__*", "--noimport")
    assert nothing.returncode == 2 and "matches no stored_as" in nothing.stderr
    (tmp_path / "MANIFEST.json").write_text((small_corpus / "MANIFEST.json").read_text())
    absent = _run(f"--corpus={tmp_path}", "--noimport")
    assert absent.returncode == 2 and "not on disk" in absent.stderr and "README.md" in absent.stderr
    assert _run("--jobs=0").returncode == 2
