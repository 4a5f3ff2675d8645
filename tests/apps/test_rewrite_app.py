"""compat-rewrite end to end, through its console entry point in a subprocess: diff, --in-place, json, exit codes."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from compat.reports.merged_tools import check_tool_report

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
    check_tool_report("stdout", report)  # compat/reports/rewrite_report.schema.json
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


@pytest.mark.parametrize("flag, said", [
    ("--scenarios=summ", "--scenarios: unknown scenario(s) ['summ'] (did you mean `sum`?)"),
    ("--entries=f:float32[100000,100000]", "--entries: entry `f` input 0: float32[100000, 100000] has"),
])
def test_an_unknown_name_or_a_bad_entry_names_the_flag_it_came_from_once(tree: Path, flag: str, said: str) -> None:
    user = tree / "user_model.py"
    user.write_text(WRONG_BY_HAND)
    bad = _run("--verify", flag, str(user))
    assert bad.returncode == 2 and said in bad.stderr, bad.stderr
    assert "--scenarios: scenarios" not in bad.stderr and "--entries: --entries" not in bad.stderr


def test_entries_named_in_a_comment_do_not_hide_the_flag(tree: Path) -> None:
    user = tree / "user_model.py"
    user.write_text("# GRADCOMPAT_ENTRIES are given on the command line\n" + WRONG_BY_HAND)
    done = _run("--verify", "--entries=model:float32[4]", "--scenarios=forward,sum", str(user))
    assert "user_model.py: verify: equivalent" in done.stderr, done.stderr
    assert "note: `model`" not in done.stderr  # model's inputs came from --entries, not inferred


# -- exit codes: TODO sites left for the user are never "nothing to do" --

TODO_ONLY = ("import tensorflow.compat.v1 as tf\nMAP = {'Sign': 'Identity'}\n\n\ndef f(x):\n"
             "    with tf.get_default_graph().gradient_override_map(MAP):\n        return tf.sign(x)\n")


def test_todo_sites_exit_4_and_are_counted_again_on_a_rerun(tree: Path) -> None:
    todo = tree / "todo.py"
    todo.write_text(TODO_ONLY)
    first = _run("--in-place", "--format=json", str(todo))
    assert first.returncode == 4, first.stderr
    report = json.loads(first.stdout)
    assert report["exit_code"] == 4 and report["files"][0]["status"] == "todo" and report["files"][0]["written"]
    assert report["summary"]["todo"] == 1 and report["summary"]["rewritten"] == 0
    again = _run("--in-place", str(todo))
    assert again.returncode == 4, again.stderr
    assert "1 legacy sites: 0 rewritten, 0 kept (valid TF2 as they are), 1 TODO" in again.stderr
    assert "left for you to migrate by hand" in again.stderr
    assert "unchanged [line 7 override_map todo]" in again.stderr


def test_todo_wins_over_changes_and_skipped_files_win_over_todo(tree: Path) -> None:
    (tree / "todo.py").write_text(TODO_ONLY)
    assert _run(str(tree / "sign_ste.py")).returncode == 1
    assert _run(str(tree / "sign_ste.py"), str(tree / "todo.py")).returncode == 4
    (tree / "py2.py").write_text("print 'RegisterGradient'\n")
    assert _run(str(tree / "sign_ste.py"), str(tree / "todo.py"), str(tree / "py2.py")).returncode == 3


KEPT_ONLY = ('import tensorflow as tf\n\n_lib = tf.load_op_library("zero_out.so")\n\n\n'
             '@tf.RegisterGradient("ZeroOut")\ndef _zero_out_grad(op, grad):\n'
             '    return grad * op.get_attr("scale")\n')


def test_kept_sites_are_done_exit_0_and_show_in_json_and_the_summary(tree: Path) -> None:
    kept = tree / "kept.py"
    kept.write_text(KEPT_ONLY)
    done = _run("--format=json", str(kept))
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    [site] = report["files"][0]["sites"]
    assert site["outcome"] == "kept" and "tf.load_op_library" in site["reason"]
    assert report["files"][0]["status"] == "unchanged" and report["summary"]["sites_kept"] == 1
    assert "1 legacy sites: 0 rewritten, 1 kept (valid TF2 as they are), 0 TODO" in done.stderr
    assert _run(str(kept), str(tree / "sign_ste.py")).returncode == 1
    assert kept.read_text() == KEPT_ONLY


def test_help_states_the_exit_codes_and_the_default_excludes() -> None:
    done = _run("--help")
    assert done.returncode == 0
    for needle in ("4 legacy sites remain TODO", "--[no]default_excludes", "site-packages", "pyvenv.cfg"):
        assert needle in done.stdout, needle


# -- files --in-place must not replace: the JSON lists nothing as rewritten --

def test_read_only_file_is_skipped_and_its_sites_are_not_reported_rewritten(tree: Path) -> None:
    target = tree / "sign_ste.py"
    target.chmod(0o444)
    done = _run("--in-place", "--format=json", str(target))
    assert done.returncode == 3, done.stderr
    report = json.loads(done.stdout)
    entry = report["files"][0]
    assert entry["status"] == "skipped" and "read-only" in entry["reason"]
    assert [s["outcome"] for s in entry["sites"]] == ["skipped"]
    assert report["summary"]["sites_rewritten"] == 0 and report["summary"]["sites_skipped"] == 1
    assert target.read_text() == (LEGACY / "sign_ste.py").read_text()


def test_non_utf8_file_name_in_json_and_in_a_diff_on_a_strict_utf8_stdout(tmp_path: Path) -> None:
    name = os.path.join(os.fsencode(tmp_path), b"caf\xe9.py")
    with open(name, "wb") as handle:
        handle.write((LEGACY / "sign_ste.py").read_bytes())
    done = _run("--format=json", str(tmp_path))
    check_tool_report("stdout", json.loads(done.stdout))
    entry = json.loads(done.stdout)["files"][0]
    assert entry["path"].endswith("caf\\xe9.py") and bytes.fromhex(entry["path_bytes_hex"]) == name
    env = {**os.environ, "PYTHONPATH": str(REPO), "PYTHONIOENCODING": "utf-8:strict"}
    diff = subprocess.run([sys.executable, "-m", "compat.apps.rewrite", str(tmp_path)], capture_output=True,
                          timeout=120, env=env)
    assert diff.returncode == 1, diff.stderr.decode(errors="replace")
    assert b"--- " + name + b"\n" in diff.stdout  # the exact bytes, as `patch` needs them


# -- default excludes: virtualenvs, installed packages, VCS and build output are not walked unless named --

def _walked(*args: str) -> set[str]:
    done = _run("--format=json", *args)
    assert done.returncode in (0, 1, 4), done.stderr
    check_tool_report("stdout", json.loads(done.stdout))
    return {f["path"] for f in json.loads(done.stdout)["files"]}


def test_default_excludes_skip_virtualenvs_and_build_output_unless_named(tmp_path: Path) -> None:
    ste = (LEGACY / "sign_ste.py").read_text()
    files = ["src/ste.py", "pkg/build.py", ".venv/lib/python3.11/site-packages/tf_mod.py",
             "my_env/lib/mod.py", "build/lib/ste.py", ".git/hooks/hook.py", "vendor/site-packages/dep.py"]
    for relative in files:
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relative).write_text(ste)
    (tmp_path / "my_env" / "pyvenv.cfg").write_text("home = /usr/bin\n")  # a virtualenv by its marker, any name
    root = str(tmp_path)
    assert _walked(root) == {f"{root}/src/ste.py", f"{root}/pkg/build.py"}
    done = _run(root)
    assert "not walked (default excludes" in done.stderr
    for skipped in (".git", ".venv", "build", "my_env", "vendor/site-packages"):
        assert f"{root}/{skipped}" in done.stderr, skipped
    assert _walked("--nodefault_excludes", root) == {f"{root}/{f}" for f in files}
    assert _walked(f"{root}/.venv") == {f"{root}/.venv/lib/python3.11/site-packages/tf_mod.py"}
    assert _walked(f"{root}/my_env") == {f"{root}/my_env/lib/mod.py"}
    assert _walked(f"{root}/build/lib/ste.py") == {f"{root}/build/lib/ste.py"}


# -- signals: an interrupted --in-place leaves no temporary file, and a later run removes a killed run's --

_PAUSED_BEFORE_REPLACE = """
import os, sys, time
marker = sys.argv.pop(1)
real_replace = os.replace
def paused(src, dst, *args, **kwargs):
    if os.fspath(src).endswith(".tmp"):  # the temporary file is written and about to replace the original
        open(marker, "w").close()
        time.sleep(60)
    return real_replace(src, dst, *args, **kwargs)
os.replace = paused
from compat.apps.rewrite import run
run()
"""


def _paused_in_place_run(target: Path, marker: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    child = subprocess.Popen([sys.executable, "-c", _PAUSED_BEFORE_REPLACE, str(marker), "--in-place", str(target)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    for _ in range(600):
        if marker.exists() or child.poll() is not None:
            break
        time.sleep(0.1)
    assert marker.exists(), child.communicate(timeout=10)
    return child


def _temporaries(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.startswith(".") and p.name.endswith(".tmp"))


@pytest.mark.parametrize("signum,says", [(signal.SIGTERM, "stopped by SIGTERM"), (signal.SIGHUP, "stopped by SIGHUP"),
                                         (signal.SIGINT, "interrupted")], ids=["SIGTERM", "SIGHUP", "SIGINT"])
def test_a_signal_during_in_place_leaves_no_temporary_and_the_original_intact(tree: Path, tmp_path: Path,
                                                                               signum: int, says: str) -> None:
    target = tree / "sign_ste.py"
    original = target.read_text()
    child = _paused_in_place_run(target, tmp_path / "paused")
    assert len(_temporaries(tree)) == 1, "the run is paused with its temporary file written"
    child.send_signal(signum)
    _, stderr = child.communicate(timeout=60)
    assert child.returncode == 128 + signum, stderr
    assert says in stderr
    assert _temporaries(tree) == [] and target.read_text() == original


def test_a_later_run_removes_the_temporary_a_killed_run_left(tree: Path, tmp_path: Path) -> None:
    target = tree / "sign_ste.py"
    original = target.read_text()
    (tree / ".sign_ste.py.backup.tmp").write_text("not ours: another tool's name")
    child = _paused_in_place_run(target, tmp_path / "paused")
    child.kill()  # SIGKILL cannot be handled: the temporary file stays
    child.communicate(timeout=60)
    leftover = [name for name in _temporaries(tree) if name != ".sign_ste.py.backup.tmp"]
    assert len(leftover) == 1 and target.read_text() == original
    then = time.time() - 60  # older than a live writer's: nobody holds its lock, it is stale
    os.utime(tree / leftover[0], (then, then))
    done = _run("--in-place", str(target))
    assert done.returncode == 1, done.stderr
    assert _temporaries(tree) == [".sign_ste.py.backup.tmp"]
    assert target.read_text() == (EXPECTED / "sign_ste.py").read_text()


@pytest.mark.skipif(shutil.which("setpriv") is None,
                    reason="needs setpriv, to run as a user who may write the directory but not the file")
def test_a_file_you_may_not_write_is_not_replaced_though_its_directory_is_writable(tree: Path, give_to_nobody) -> None:
    target = tree / "sign_ste.py"
    give_to_nobody(target)  # nobody's file, mode 0644; the directory stays root's
    target.chmod(0o644)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(["setpriv", "--bounding-set=-dac_override,-dac_read_search", sys.executable, "-m",
                           "compat.apps.rewrite", "--in-place", str(target)],
                          capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 3, done.stderr
    assert "is not writable by you (mode 0644, owner nobody:nogroup)" in done.stderr
    assert target.read_text() == (LEGACY / "sign_ste.py").read_text() and target.stat().st_uid == 65534
