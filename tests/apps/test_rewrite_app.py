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


def test_verify_without_compat_verify_is_a_usage_error(tree: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    # `None` in sys.modules makes `import compat.verify` raise ImportError, as in an install without it.
    code = "import sys; sys.modules['compat.verify'] = None; from compat.apps.rewrite import run; run()"
    done = subprocess.run([sys.executable, "-c", code, "--verify", str(tree / "sign_ste.py")],
                          capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 2, done.stderr
    assert "--verify needs compat.verify" in done.stderr
    assert (tree / "sign_ste.py").read_text() == (LEGACY / "sign_ste.py").read_text()
