"""compat-audit end to end in a subprocess: exit codes, formats, --exclude, --output, and no TensorFlow."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
LEGACY = "import tensorflow as tf\n@tf.RegisterGradient('AGrad')\ndef g(op, grad):\n    return grad\n"


def _run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "compat.apps.audit", *args], capture_output=True, text=True, timeout=120,
        cwd=cwd or REPO, env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
    )


@pytest.fixture
def tree(tmp_path):
    (tmp_path / "legacy.py").write_text(LEGACY)
    (tmp_path / "vendor").mkdir()
    (tmp_path / "vendor" / "other.py").write_text(LEGACY.replace("'AGrad'", "'BGrad'"))
    (tmp_path / "clean.py").write_text("x = 1\n")
    return tmp_path


def test_exit_0_when_clean(tree):
    proc = _run(str(tree / "clean.py"))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ""
    assert "1 files" in proc.stderr and "0 findings" in proc.stderr


def test_exit_1_with_text_findings(tree):
    proc = _run(str(tree))
    assert proc.returncode == 1, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines == [f"{tree}/legacy.py:2:2: GC003 warning: RegisterGradient('AGrad') on 'g': a graph-mode "
                     "gradient registry entry",
                     f"{tree}/vendor/other.py:2:2: GC003 warning: RegisterGradient('BGrad') on 'g': a graph-mode "
                     "gradient registry entry"]
    assert "[" not in proc.stderr  # no progress bar when stderr is not a terminal


@pytest.mark.parametrize("args,needle", [
    ((), "give at least one file or directory"),
    (("does/not/exist",), "no such file or directory: does/not/exist"),
    (("--format=xml", "."), "--format=xml"),
])
def test_exit_2_on_usage_errors(args, needle):
    proc = _run(*args)
    assert proc.returncode == 2
    assert needle in proc.stderr


def test_exclude_repeatable_and_comma_separated(tree):
    assert _run("--exclude=vendor,nothing*", "--exclude=legacy.py", str(tree)).returncode == 0
    proc = _run("--exclude=vendor/*", str(tree))
    assert proc.returncode == 1 and "vendor" not in proc.stdout and "legacy.py" in proc.stdout


def test_output_file_written_atomically(tree, tmp_path):
    out = tmp_path / "report.json"
    out.write_text("stale")
    proc = _run("--format=json", f"--output={out}", str(tree))
    assert proc.returncode == 1 and proc.stdout == ""
    doc = json.loads(out.read_text())
    assert doc["summary"]["findings"] == 2
    assert not list(tmp_path.glob(".compat-audit-*"))


def test_sarif_uris_relative_to_working_directory(tree):
    proc = _run("--format=sarif", ".", cwd=tree)
    uris = [r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
            for r in json.loads(proc.stdout)["runs"][0]["results"]]
    assert uris == ["legacy.py", "vendor/other.py"]


def test_forced_progress_goes_to_stderr_only(tree):
    proc = _run("--progress", "--format=json", str(tree))
    assert "3/3 files" in proc.stderr
    json.loads(proc.stdout)


def test_app_never_imports_tensorflow(tree, tmp_path):
    wrapper = tmp_path / "wrapper.py"
    wrapper.write_text(
        "import runpy, sys\n"
        "try:\n"
        "    runpy.run_module('compat.apps.audit', run_name='__main__')\n"
        "finally:\n"
        "    leaked = sorted(m for m in sys.modules if m.split('.')[0] in ('tensorflow', 'keras'))\n"
        "    sys.stderr.write(f'LEAKED={leaked}\\n')\n")
    proc = subprocess.run([sys.executable, str(wrapper), "--format=sarif", str(tree)], capture_output=True,
                          text=True, timeout=120, env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 1, proc.stderr
    assert "LEAKED=[]" in proc.stderr


def test_output_to_a_device_node_writes_it_and_leaves_it_a_device(tree, tmp_path):
    import os
    import stat

    device = tmp_path / "null"
    try:
        os.mknod(device, stat.S_IFCHR | 0o666, os.makedev(1, 3))  # a /dev/null clone; the real one is never used
    except OSError as e:
        pytest.skip(f"cannot create a device node here ({e})")
    proc = _run("--format=json", f"--output={device}", str(tree))
    assert proc.returncode == 1, proc.stderr
    assert stat.S_ISCHR(os.lstat(device).st_mode)


@pytest.mark.parametrize("output", ["/proc/compat-audit-test.json", "{tree}/clean.py/report.json", "{tree}"],
                         ids=["proc", "under_a_file", "directory"])
def test_unwritable_output_is_exit_2_before_the_audit(tree, output):
    output = output.format(tree=tree)
    proc = _run(f"--output={output}", str(tree))
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"compat-audit: --output={output}")
    assert "scanned" not in proc.stderr  # the audit never started: no summary line


def test_output_fifo_without_reader_is_exit_2_not_a_hang(tree, tmp_path):
    import os

    os.mkfifo(tmp_path / "pipe")
    proc = _run(f"--output={tmp_path / 'pipe'}", str(tree))
    assert proc.returncode == 2 and "FIFO with no reader" in proc.stderr


@pytest.mark.parametrize("fmt", ["text", "markdown", "json", "sarif"])
def test_non_utf8_file_names_are_reported_in_every_format(tmp_path, fmt):
    import os

    src = tmp_path / "src"
    src.mkdir()
    with open(os.path.join(os.fsencode(src), b"caf\xe9.py"), "wb") as f:
        f.write(LEGACY.encode())
    out = tmp_path / f"report.{fmt}"
    proc = _run(f"--format={fmt}", f"--output={out}", str(src))
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "caf" in out.read_text(encoding="utf-8")


def test_output_in_a_new_directory_is_created_like_compat_check_does(tree, tmp_path):
    target = tmp_path / "reports" / "nested" / "audit.json"
    proc = _run("--format=json", f"--output={target}", str(tree))
    assert proc.returncode in (0, 1), proc.stderr
    assert json.loads(target.read_text())["tool"] == "compat-audit"


def test_default_excludes_are_listed_in_help_and_nodefault_excludes_walks_everything(tree):
    (tree / ".venv").mkdir()
    (tree / ".venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (tree / ".venv" / "installed.py").write_text(LEGACY.replace("'A'", "'C'"))
    paths = {json_finding["path"] for json_finding in json.loads(_run("--format=json", str(tree)).stdout)["findings"]}
    assert paths == {f"{tree}/legacy.py", f"{tree}/vendor/other.py"}
    everything = json.loads(_run("--format=json", "--nodefault_excludes", str(tree)).stdout)["findings"]
    assert f"{tree}/.venv/installed.py" in {f["path"] for f in everything}
    help_text = _run("--help").stdout
    assert "--[no]default_excludes" in help_text and "site-packages" in help_text and "pyvenv.cfg" in help_text
