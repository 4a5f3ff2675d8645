"""compat-rewrite end to end, through its console entry point in a subprocess: diff, --in-place, json, exit codes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent.parent
LEGACY = REPO / "tests" / "data" / "legacy"
EXPECTED = REPO / "tests" / "data" / "legacy_expected"


def _run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.run([sys.executable, "-m", "compat.apps.rewrite", *args], capture_output=True, text=True,
                          timeout=120, env=env, cwd=cwd)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    shutil.copytree(LEGACY, tmp_path / "legacy")
    return tmp_path / "legacy"


def test_dry_run_prints_a_diff_and_exits_1(tree: Path) -> None:
    before = {p.name: p.read_text() for p in tree.iterdir()}
    done = _run(str(tree / "sign_ste.py"))
    assert done.returncode == 1, done.stderr
    assert "+    return _sign_with_identity_grad(x)" in done.stdout
    assert {p.name: p.read_text() for p in tree.iterdir()} == before


def test_in_place_writes_the_goldens_then_a_second_run_has_nothing_to_do(tree: Path) -> None:
    first = _run("--in-place", str(tree))
    assert first.returncode == 1, first.stderr
    for path in sorted(tree.glob("*.py")):
        assert path.read_text() == (EXPECTED / path.name).read_text(), path.name
    second = _run("--in-place", str(tree))
    assert second.returncode == 0, second.stderr
    assert "0 rewritten" in second.stderr


def test_json_reports_files_and_sites(tree: Path) -> None:
    done = _run("--format=json", str(tree / "flip_gradient.py"), str(tree / "sign_ste.py"))
    assert done.returncode == 1
    report = json.loads(done.stdout)
    assert report["summary"]["rewritten"] == 2 and report["summary"]["sites_todo"] == 0
    flip = report["files"][0]
    assert flip["status"] == "rewritten"
    assert {(s["pattern"], s["outcome"]) for s in flip["sites"]} == {
        ("register_gradient", "rewritten"), ("override_map", "rewritten")}
    assert all(isinstance(s["line"], int) for s in flip["sites"])


def test_unparsable_file_exits_3_and_is_not_touched(tree: Path) -> None:
    bad = tree / "py2.py"
    bad.write_text("print 'RegisterGradient'\n")
    done = _run("--in-place", "--format=json", str(tree / "sign_ste.py"), str(bad))
    assert done.returncode == 3
    statuses = {Path(f["path"]).name: f["status"] for f in json.loads(done.stdout)["files"]}
    assert statuses == {"sign_ste.py": "rewritten", "py2.py": "failed"}
    assert bad.read_text() == "print 'RegisterGradient'\n"


def test_clean_file_exits_0(tmp_path: Path) -> None:
    clean = tmp_path / "clean.py"
    clean.write_text("x = 1\n")
    assert _run(str(clean)).returncode == 0


@pytest.mark.parametrize("args", [(), ("does/not/exist.py",), ("--format=yaml", "x.py")])
def test_usage_errors_exit_2(args: tuple[str, ...], tmp_path: Path) -> None:
    assert _run(*args, cwd=tmp_path).returncode == 2


WRONG_BY_HAND = (
    "import tensorflow.compat.v1 as tf\n\n\n"
    "def sign_ste(x):\n"
    "    G = tf.get_default_graph()\n"
    "    with G.gradient_override_map({\"Sign\": \"Identity\"}):\n"
    "        return tf.sign(x)\n\n\n"
    "def model(x):\n"
    "    return sign_ste(x) * 2.0\n"
)


def test_in_place_verify_writes_only_proven_rewrites_judged_against_the_original(tree: Path) -> None:
    """--verify must compare with the file as it was, and --in-place then writes only what it proved."""
    user = tree / "user_model.py"
    user.write_text(WRONG_BY_HAND)
    done = _run("--in-place", "--verify", "--entries=model:float32[4]", str(user), str(tree / "sign_ste.py"))
    assert done.returncode == 0 + 1, done.stderr  # changes made, every rewrite proven
    assert "user_model.py: verify: equivalent" in done.stderr and "sign_ste.py: verify: equivalent" in done.stderr
    assert user.read_text() != WRONG_BY_HAND and "custom_gradient" in user.read_text()
    assert (tree / "sign_ste.py").read_text() == (EXPECTED / "sign_ste.py").read_text()


def test_verify_without_entries_infers_them_and_says_how(tree: Path) -> None:
    user = tree / "user_model.py"
    user.write_text(WRONG_BY_HAND)
    done = _run("--in-place", "--verify", "--scenarios=forward,sum,weighted", str(user))
    assert done.returncode == 1, done.stderr
    assert "user_model.py: verify: equivalent (EQUIVALENT: 9 of 9 cells compared and the same)" in done.stderr
    assert "note: `sign_ste`: inputs inferred: float32[3], the first of ranks 1-4" in done.stderr
    assert "custom_gradient" in user.read_text()


IN_A_METHOD = (
    "import tensorflow.compat.v1 as tf\n\n\n"
    "class Net:\n"
    "    def call(self, x):\n"
    "        with tf.get_default_graph().gradient_override_map({\"Sign\": \"Identity\"}):\n"
    "            return tf.sign(x)\n"
)


def test_verify_that_can_infer_nothing_leaves_the_file_untouched_and_says_what_to_declare(tree: Path) -> None:
    user = tree / "net.py"
    user.write_text(IN_A_METHOD)
    done = _run("--in-place", "--verify", str(user))
    assert done.returncode == 3, done.stderr
    assert "NOT proven equivalent" in done.stderr and "in a method" in done.stderr
    assert "GRADCOMPAT_ENTRIES" in done.stderr
    assert "not written: --verify did not prove the rewrite equivalent" in done.stderr
    assert user.read_text() == IN_A_METHOD


@pytest.mark.parametrize("args, message", [
    (("--verify", "--entries=model:float32["), "--entries"),
    (("--entries=model:float32[4]",), "only apply with --verify"),
    (("--scenarios=sum",), "only apply with --verify"),
    (("--verify", "--scenarios=summ"), "unknown scenario"),
])
def test_verify_flags_are_checked_before_anything_runs(tree: Path, args: tuple[str, ...], message: str) -> None:
    user = tree / "user_model.py"
    user.write_text(WRONG_BY_HAND)
    bad = _run(*args, str(user))
    assert bad.returncode == 2 and message in bad.stderr, bad.stderr


def test_entries_named_in_a_comment_do_not_hide_the_flag(tree: Path) -> None:
    user = tree / "user_model.py"
    user.write_text("# GRADCOMPAT_ENTRIES are given on the command line\n" + WRONG_BY_HAND)
    done = _run("--verify", "--entries=model:float32[4]", "--scenarios=forward,sum", str(user))
    assert "user_model.py: verify: equivalent" in done.stderr, done.stderr
    assert "note: `model`" not in done.stderr  # model's inputs came from --entries, not inferred
