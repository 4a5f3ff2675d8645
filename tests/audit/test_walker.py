"""Reliability: odd files are GC000 (or audited correctly), the run always finishes, excludes and loops."""

from __future__ import annotations

import os
import sys
import time

import pytest

from compat.audit import audit_paths
from compat.audit.walker import iter_python_files, read_and_parse

LEGACY = "import tensorflow as tf\n@tf.RegisterGradient('{name}')\ndef g(op, grad):\n    return grad\n"


@pytest.fixture
def hostile_tree(tmp_path):
    """A tree with every kind of file that breaks naive tools, plus one good file."""
    (tmp_path / "good.py").write_text(LEGACY.format(name="Good"))
    (tmp_path / "py2.py").write_text('print "RegisterGradient"\n')
    (tmp_path / "py2_plain.py").write_text('print "x"\n')
    (tmp_path / "latin1.py").write_bytes(b"x = '\xff\xfe caf\xe9'\n")
    (tmp_path / "latin1_declared.py").write_bytes(b"# -*- coding: latin-1 -*-\nx = 'caf\xe9'\n")
    (tmp_path / "binary.py").write_bytes(b"\x7fELF\x02\x01\x01\x00\x00\x00" + bytes(range(256)))
    (tmp_path / "empty.py").write_bytes(b"")
    (tmp_path / "fstrings.py").write_text(
        "import tensorflow as tf\nx = f\"{f\"{f\"{1}\"}\"}\"\n@tf.RegisterGradient('F')\ndef g(op, grad):\n"
        "    return grad\n")
    (tmp_path / "asyncmatch.py").write_text(
        "import tensorflow as tf\nasync def h(x):\n    async with x:\n        match x:\n"
        "            case [a, *_]:\n                tf.RegisterGradient('M')(lambda op, g: g)\n")
    sub = tmp_path / "pkg"
    sub.mkdir()
    (sub / "mod.py").write_text(LEGACY.format(name="Pkg"))
    os.symlink(tmp_path, sub / "loop")  # pkg/loop -> tree root
    unreadable = tmp_path / "unreadable.py"
    unreadable.write_text(LEGACY.format(name="Secret"))
    unreadable.chmod(0)
    yield tmp_path
    unreadable.chmod(0o644)


def _by_file(report):
    out: dict[str, list[str]] = {}
    for f in report.findings:
        out.setdefault(os.path.basename(f.path), []).append(f.rule)
    return out


@pytest.mark.parametrize("jobs", [1, 2], ids=["serial", "parallel"])
def test_hostile_tree_finishes_and_reports_every_other_file(hostile_tree, jobs, monkeypatch):
    monkeypatch.setattr("compat.audit.engine._PARALLEL_MIN_FILES", 2)
    report = audit_paths([str(hostile_tree)], jobs=jobs)
    by_file = _by_file(report)
    assert by_file["good.py"] == ["GC003"]
    assert by_file["mod.py"] == ["GC003"]  # reached once, not again through the loop
    assert by_file["py2.py"] == ["GC000"]
    assert by_file["latin1.py"] == ["GC000"]
    assert by_file["binary.py"] == ["GC000"]
    assert by_file["asyncmatch.py"] == ["GC003"]
    # Before 3.12 a nested f-string does not parse: GC000, and the text scan still finds its RegisterGradient.
    assert by_file["fstrings.py"] == (["GC003"] if sys.version_info >= (3, 12) else ["GC000", "GC003"])
    for clean in ("empty.py", "latin1_declared.py", "py2_plain.py"):
        assert clean not in by_file
    if os.geteuid() != 0:
        assert by_file["unreadable.py"] == ["GC000"]
    assert report.files_scanned == 11
    assert report.files_unreadable == sum("GC000" in rules for rules in by_file.values())


def test_gc000_messages_say_what_went_wrong(hostile_tree):
    report = audit_paths([str(hostile_tree)], jobs=1)
    messages = {os.path.basename(f.path): f.message for f in report.findings if f.rule == "GC000"}
    assert "Python 2" in messages["py2.py"]
    assert "binary" in messages["binary.py"]
    assert "decode" in messages["latin1.py"]
    assert all(f.suggestion for f in report.findings if f.rule == "GC000")


def test_strict_parses_every_file(hostile_tree):
    report = audit_paths([str(hostile_tree)], jobs=1, strict=True)
    assert _by_file(report)["py2_plain.py"] == ["GC000"]


def test_excludes_match_relative_paths_and_base_names(hostile_tree):
    files = {os.path.relpath(p, hostile_tree) for p in iter_python_files([str(hostile_tree)], ["pkg", "py2*"])}
    assert "good.py" in files
    assert not any(f.startswith("pkg") or f.startswith("py2") for f in files)
    files = {os.path.relpath(p, hostile_tree) for p in iter_python_files([str(hostile_tree)], ["pkg/*.py"])}
    assert "pkg/mod.py" not in files and "good.py" in files


_INSTALLED_AND_GENERATED = [".venv/lib/python3.11/site-packages/tf.py", "envs/work/lib/mod.py", "build/lib/a.py",
                             ".git/hooks/hook.py", "gc.egg-info/x.py", "bazel-out/k8/a.py", "vendor/site-packages/d.py"]


@pytest.fixture
def project_tree(tmp_path):
    """A project with its sources beside a virtualenv, VCS data and build output, each holding legacy code."""
    for relative in ["src/a.py", "pkg/build.py", *_INSTALLED_AND_GENERATED]:
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relative).write_text(LEGACY.format(name=relative.replace("/", "_")))
    (tmp_path / "envs" / "work" / "pyvenv.cfg").write_text("home = /usr/bin\n")  # a virtualenv by its marker
    return tmp_path


def test_default_excludes_skip_virtualenvs_vcs_and_build_output(project_tree):
    skipped: list[str] = []
    files = {os.path.relpath(p, project_tree)
             for p in iter_python_files([str(project_tree)], on_default_excluded=skipped.append)}
    assert files == {"src/a.py", "pkg/build.py"}  # a file named build.py is not a build directory
    assert {os.path.relpath(p, project_tree) for p in skipped} == {
        ".venv", "envs/work", "build", ".git", "gc.egg-info", "bazel-out", "vendor/site-packages"}
    everything = {os.path.relpath(p, project_tree)
                  for p in iter_python_files([str(project_tree)], default_excludes=False)}
    assert everything == {"src/a.py", "pkg/build.py", *_INSTALLED_AND_GENERATED}


def test_the_readme_lists_every_default_exclude():
    from pathlib import Path

    from compat.audit.walker import DEFAULT_EXCLUDES, VIRTUALENV_MARKER

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    section = readme[readme.index("Which files, and how they are written"):]
    assert [p for p in (*DEFAULT_EXCLUDES, VIRTUALENV_MARKER) if f"`{p}`" not in section] == []


def test_a_directory_named_explicitly_is_walked_even_if_a_default_exclude(project_tree):
    assert [os.path.relpath(p, project_tree) for p in iter_python_files([str(project_tree / ".venv")])] == [
        ".venv/lib/python3.11/site-packages/tf.py"]
    assert [os.path.relpath(p, project_tree) for p in iter_python_files([str(project_tree / "envs" / "work")])] == [
        "envs/work/lib/mod.py"]
    assert list(iter_python_files([str(project_tree / "build" / "lib" / "a.py")])) == [
        str(project_tree / "build" / "lib" / "a.py")]


def test_the_audit_walks_the_same_files_as_the_rewriter(project_tree):
    from compat.rewrite.files import _files

    audited = {f.path for f in audit_paths([str(project_tree)], jobs=1).findings}
    assert audited == {str(project_tree / "src" / "a.py"), str(project_tree / "pkg" / "build.py")}
    assert set(_files([str(project_tree)], ())) == audited
    assert len(audit_paths([str(project_tree)], jobs=1, default_excludes=False).findings) == 9


def test_symlink_loop_is_walked_once(hostile_tree):
    files = list(iter_python_files([str(hostile_tree)]))
    assert len(files) == len(set(files)) == 11
    assert not any("/loop/" in f for f in files)


def test_explicit_file_is_audited_whatever_its_suffix(tmp_path):
    script = tmp_path / "script"
    script.write_text(LEGACY.format(name="S"))
    assert list(iter_python_files([str(script)])) == [str(script)]


def test_50mb_file_streams_without_parsing(tmp_path):
    big = tmp_path / "big.py"
    line = b"x = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22]\n"
    with open(big, "wb") as f:
        f.write(line * (50 * 1024 * 1024 // len(line) + 1))
    start = time.perf_counter()
    result, tree, _ = read_and_parse(str(big))
    assert tree is None and not result.findings and result.lines > 500_000
    with open(big, "ab") as f:
        f.write(b"# gradient_override_map\n")
    result, tree, _ = read_and_parse(str(big))
    assert tree is None and [f.rule for f in result.findings] == ["GC000"]
    assert "raise max_file_bytes to audit it" in result.findings[0].message
    assert time.perf_counter() - start < 10
    report = audit_paths([str(tmp_path)], jobs=1)
    assert report.files_scanned == 1 and report.files_unreadable == 1


def test_trigger_split_across_stream_chunks_is_seen(tmp_path, monkeypatch):
    monkeypatch.setattr("compat.audit.walker._CHUNK", 8)
    path = tmp_path / "m.py"
    path.write_text("x = 1  # RegisterGradient\n")
    result, _, _ = read_and_parse(str(path), max_file_bytes=4)
    assert [f.rule for f in result.findings] == ["GC000"]


# -- hostile inputs: every case runs in a subprocess with a timeout and a memory cap, so a regression fails
# -- instead of hanging or exhausting the machine.

_AUDIT_SCRIPT = (
    "import json, sys\n"
    "from compat.audit import audit_paths\n"
    "strict = sys.argv[1] == 'strict'\n"
    "r = audit_paths(sys.argv[2:], jobs=1, strict=strict)\n"
    # VmHWM starts afresh at exec; ru_maxrss would keep the peak of the pytest process this child was forked from.
    "peak = [int(l.split()[1]) for l in open('/proc/self/status') if l.startswith('VmHWM:')][0]\n"
    "print(json.dumps({'scanned': r.files_scanned, 'findings': [[f.path, f.rule, f.message] for f in r.findings],\n"
    "                  'peak_mib': peak / 1024}))\n"
)
_MEMORY_CAP = 2 << 30


def _drop_file_permission_override() -> None:
    """In the child: give up root's CAP_DAC_OVERRIDE/CAP_DAC_READ_SEARCH, so chmod 0 means unreadable."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (1, 2):  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH
        if libc.prctl(24, cap, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


def audit_in_subprocess(*paths, strict: bool = False, as_unprivileged: bool = False, timeout: float = 60):
    import json
    import resource
    import subprocess

    def limits() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (_MEMORY_CAP, _MEMORY_CAP))
        if as_unprivileged and os.geteuid() == 0:
            _drop_file_permission_override()

    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    proc = subprocess.run([sys.executable, "-c", _AUDIT_SCRIPT, "strict" if strict else "-", *map(str, paths)],
                          capture_output=True, text=True, timeout=timeout, preexec_fn=limits,
                          env={"PYTHONPATH": repo, "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


def _rules(result) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for path, rule, _ in result["findings"]:
        out.setdefault(os.path.basename(path), []).append(rule)
    return out


def _messages(result) -> dict[str, str]:
    return {os.path.basename(path): message for path, _, message in result["findings"]}


def _mknod_null(path) -> None:
    import stat as stat_module

    try:
        os.mknod(path, stat_module.S_IFCHR | 0o666, os.makedev(1, 3))  # a /dev/null clone, in tmp_path
    except (PermissionError, OSError) as e:
        pytest.skip(f"cannot create a device node here ({e}); needs root outside a restricted container")


def test_fifo_in_a_tree_is_gc000_and_never_opened(tmp_path):
    (tmp_path / "good.py").write_text(LEGACY.format(name="Good"))
    os.mkfifo(tmp_path / "pipe.py")
    result = audit_in_subprocess(tmp_path)
    assert _rules(result) == {"good.py": ["GC003"], "pipe.py": ["GC000"]}
    assert "not a regular file (a FIFO)" in _messages(result)["pipe.py"]


def test_symlink_to_an_endless_device_is_gc000(tmp_path):
    os.symlink("/dev/zero", tmp_path / "zero.py")  # only the symlink is ours; /dev/zero is never opened
    (tmp_path / "good.py").write_text(LEGACY.format(name="Good"))
    result = audit_in_subprocess(tmp_path)
    assert _rules(result) == {"good.py": ["GC003"], "zero.py": ["GC000"]}
    assert "character device" in _messages(result)["zero.py"]


def test_read_is_capped_whatever_the_size_the_file_reports(tmp_path):
    # /proc files are regular files that report size 0; reading goes by the byte cap, not by that size.
    os.symlink("/proc/self/status", tmp_path / "status.py")
    result, tree, _ = read_and_parse(str(tmp_path / "status.py"), max_file_bytes=16, strict=True)
    assert tree is None and [f.rule for f in result.findings] == ["GC000"]
    assert "larger than the read limit (16 bytes)" in result.findings[0].message


def test_explicit_fifo_and_device_arguments_are_gc000(tmp_path):
    os.mkfifo(tmp_path / "pipe")
    _mknod_null(tmp_path / "null")
    assert list(iter_python_files([str(tmp_path / "pipe"), str(tmp_path / "null")])) == [
        str(tmp_path / "pipe"), str(tmp_path / "null")]
    result = audit_in_subprocess(tmp_path / "pipe", tmp_path / "null")
    assert result["scanned"] == 2
    assert _rules(result) == {"pipe": ["GC000"], "null": ["GC000"]}
    assert "a character device" in _messages(result)["null"]


def test_unreadable_directory_is_gc000(tmp_path):
    (tmp_path / "good.py").write_text(LEGACY.format(name="Good"))
    locked = tmp_path / "locked"
    locked.mkdir()
    (locked / "hidden.py").write_text(LEGACY.format(name="Hidden"))
    locked.chmod(0)
    try:
        result = audit_in_subprocess(tmp_path, as_unprivileged=True)
    finally:
        locked.chmod(0o755)
    assert _rules(result) == {"good.py": ["GC003"], "locked": ["GC000"]}
    assert "cannot list directory (Permission denied)" in _messages(result)["locked"]


def test_strict_reports_files_over_the_size_limit(tmp_path):
    big = tmp_path / "big.py"
    big.write_text("x = 1\n" * 10)
    result, _, _ = read_and_parse(str(big), max_file_bytes=8)
    assert not result.findings
    result, _, _ = read_and_parse(str(big), max_file_bytes=8, strict=True)
    assert [f.rule for f in result.findings] == ["GC000"]
    assert "strict mode parses every file" in result.findings[0].message


def test_a_5mb_one_line_file_is_not_parsed_and_memory_stays_bounded(tmp_path):
    big = tmp_path / "oneline.py"
    big.write_text("from tensorflow import RegisterGradient\nx = [" + "1, " * (5 * 1024 * 1024 // 3) + "]\n")
    result = audit_in_subprocess(tmp_path, timeout=120)
    assert _rules(result) == {"oneline.py": ["GC000"]}
    assert "raise max_parse_bytes to audit it" in _messages(result)["oneline.py"]
    assert result["peak_mib"] < 300  # parsing it would take about 1.7 GiB


def test_parse_limit_parses_files_up_to_it(tmp_path):
    path = tmp_path / "m.py"
    path.write_text(LEGACY.format(name="A"))
    size = path.stat().st_size
    assert read_and_parse(str(path), max_parse_bytes=size)[1] is not None
    result, tree, _ = read_and_parse(str(path), max_parse_bytes=size - 1)
    assert tree is None and "over the parse limit" in result.findings[0].message


def test_default_limits_fit_two_workers_in_2_gib():
    from compat.audit import walker

    worst_case_mib = walker.DEFAULT_MAX_PARSE_BYTES * walker._PARSE_BYTES_PER_BYTE / 2**20 + 18
    assert 2 * worst_case_mib < 2048


def test_deep_nesting_message_says_what_is_wrong(tmp_path):
    path = tmp_path / "deep.py"
    path.write_text("from tensorflow import RegisterGradient\nx = " + "-" * 100_000 + "1\n")
    result, tree, _ = read_and_parse(str(path))
    message = result.findings[0].message
    assert tree is None and "nested too deeply" in message and "MemoryError" in message
    assert not message.rstrip().endswith(":")


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="the file is valid Python 3.12")
def test_syntax_errors_name_the_grammar_used(tmp_path):
    path = tmp_path / "py312.py"
    path.write_text("from tensorflow import RegisterGradient\nx = f\"{f\"{1}\"}\"\n")
    result, _, _ = read_and_parse(str(path))
    message = result.findings[0].message
    assert "f-string" in message
    assert f"grammar of the Python running compat-audit, {sys.version_info[0]}.{sys.version_info[1]}." in message


def test_a_tree_with_every_hostile_case_finishes_and_reports_each(tmp_path):
    """Issue #9's acceptance tree: bounded time (subprocess timeout) and memory (RLIMIT_AS 2 GiB)."""
    (tmp_path / "good.py").write_text(LEGACY.format(name="Good"))
    (tmp_path / "alias.py").write_text("import tensorflow as tf\nRG = tf.RegisterGradient\n@RG('Alias')\n"
                                       "def g(op, grad):\n    return grad.numpy()\n")
    os.mkfifo(tmp_path / "pipe.py")
    os.symlink("/dev/zero", tmp_path / "zero.py")
    (tmp_path / "oneline.py").write_text(
        "from tensorflow import RegisterGradient\nx = [" + "1, " * (5 * 1024 * 1024 // 3) + "]\n")
    (tmp_path / "deep.py").write_text("from tensorflow import RegisterGradient\nx = " + "-" * 100_000 + "1\n")
    with open(os.path.join(os.fsencode(tmp_path), b"caf\xe9.py"), "wb") as f:
        f.write(LEGACY.format(name="Latin").encode())
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0)
    try:
        result = audit_in_subprocess(tmp_path, as_unprivileged=True, timeout=120)
    finally:
        locked.chmod(0o755)
    rules = _rules(result)
    assert rules["good.py"] == ["GC003"] and sorted(rules["alias.py"]) == ["GC003", "GC006"]
    assert rules["caf\udce9.py"] == ["GC003"]
    for special in ("pipe.py", "zero.py", "oneline.py", "deep.py", "locked"):
        assert rules[special] == ["GC000"], special
    assert result["peak_mib"] < 500
