"""compat-check as users run it: flags, formats, output files and exit codes."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest
from absl import app
from absl.testing import flagsaver

from compat.apps import check
from compat.contexts import CONTEXTS


def run_check(tmp_path, *args):
    """Run main() in this process (one TensorFlow import for every test) with the given flags."""
    with flagsaver.flagsaver():
        check.flags.FLAGS.unparse_flags()
        check.flags.FLAGS(["compat-check", *args])
        return check.main(["compat-check"])


def test_json_report_to_a_file(tmp_path):
    output = tmp_path / "out" / "report.json"
    code = run_check(tmp_path, "--specs=scaled_ste", "--scenarios=sum,weighted", "--format=json",
                     f"--output={output}", "--variants=custom_gradient@*,override_map@eager_tape")
    assert code == 0
    report = json.loads(output.read_text())
    assert report["reference"] == "defun_grad_func@v1_session"
    assert "tensorflow" in report and "float32" in report["tolerances"]
    cells = report["cells"]
    assert len(cells) == 2 * (len(CONTEXTS) + 1)
    pitfall = next(c for c in cells if c["variant"] == "override_map@eager_tape" and c["scenario"] == "sum")
    assert pitfall["status"] == "not_called" and pitfall["calls"] == 0
    assert {"spec", "scenario", "dtype", "variant", "mechanism", "context", "status", "differences", "calls",
            "upstream"} <= set(pitfall)
    assert not list(tmp_path.glob("out/.*.tmp"))


def test_user_spec_file_with_an_unexpected_difference_exits_1(tmp_path, capsys):
    spec_file = tmp_path / "user_ops.py"
    spec_file.write_text(textwrap.dedent('''
        import numpy as np
        import tensorflow as tf
        import compat

        BRANCHY = compat.GradientSpec(
            "branchy", tf.identity, lambda i, o, u: [u[0] * (2.0 if u[0].shape.rank is None else 1.0)],
            [np.ones((2, 2), np.float32)], op_type="Identity")
    '''))
    code = run_check(tmp_path, f"--specs={spec_file}:BRANCHY", "--scenarios=sum")
    assert code == 1
    out = capsys.readouterr().out
    assert "FAIL" in out and "branchy" in out


@pytest.mark.parametrize("flag, expected", [
    ("--specs=no_such_spec", "not a catalogue spec"),
    ("--scenarios=sideways", "unknown scenario"),
    ("--variants=custom_gradient@mars", "unknown variant"),
    ("--dtypes=int8", "unknown dtype"),
    ("--references=autodif", "--references: unknown reference(s) ['autodif'] (did you mean `autodiff`?); choose from "
                               "['autodiff', 'finite_difference']"),
])
def test_unknown_names_are_usage_errors_listing_valid_ones(tmp_path, flag, expected):
    with pytest.raises(app.UsageError) as caught:
        run_check(tmp_path, flag)
    assert caught.value.exitcode == 2
    assert expected in str(caught.value)


def test_list_prints_the_registries(tmp_path, capsys):
    assert run_check(tmp_path, "--list") == 0
    out = capsys.readouterr().out
    assert "scaled_ste" in out and "second_order" in out and "* custom_gradient@eager_tape" in out
    assert "references (the forward itself; --references, both by default):" in out
    assert "  autodiff: TensorFlow's own gradient" in out and "  finite_difference: central differences" in out
    default, opt_in = out.split("opt-in variants", 1)
    for context in ("jacobian_loop", "jacobian_pfor", "forward_accumulator", "vectorized_map", "mirrored_tape"):
        assert f"custom_gradient@{context}" in opt_in and f"@{context}" not in default
        assert f"  {context} (opt-in): " in opt_in
    assert "  custom_gradient@recompute_grad" in default


def test_references_flag_chooses_the_references_computed(tmp_path):
    output = tmp_path / "report.json"
    common = ["--specs=scaled_ste", "--scenarios=sum", "--variants=custom_gradient@eager_tape", "--format=json",
              f"--output={output}", "--jobs=1"]
    assert run_check(tmp_path, *common) == 0
    both = json.loads(output.read_text())
    assert both["references"]["names"] == ["autodiff", "finite_difference"]
    assert [f["status"] for f in both["cells"][0]["forward"]] == ["differs", "not_differentiable"]
    assert run_check(tmp_path, *common, "--references=autodiff") == 0
    assert [f["reference"] for f in json.loads(output.read_text())["cells"][0]["forward"]] == ["autodiff"]
    assert run_check(tmp_path, *common, "--references=") == 0
    assert "references" not in json.loads(output.read_text())


def test_list_with_a_spec_file_lists_that_files_specs(tmp_path, capsys):
    spec_file = tmp_path / "two_ops.py"
    spec_file.write_text(textwrap.dedent('''
        import numpy as np
        import tensorflow as tf
        import compat

        def _spec(name, description):
            return compat.GradientSpec(name, tf.identity, lambda i, o, u: [u[0]], [np.ones(2, np.float32)],
                                       description=description)

        SPECS = [_spec("halve", "halves the upstream"), _spec("plain", "")]
        print("a spec file that prints")
    '''))
    assert run_check(tmp_path, f"--specs={spec_file}:SPECS", "--list") == 0
    out = capsys.readouterr().out
    assert out.startswith(f"specs (--specs={spec_file}:SPECS):\n  halve: halves the upstream\n  plain\nscenarios:")
    assert "scaled_ste" not in out and "a spec file that prints" not in out
    with pytest.raises(app.UsageError, match="missing.py"):
        run_check(tmp_path, "--specs=missing.py:X", "--list")


def test_console_module_exit_code_2_and_help_lists_flags(tmp_path):
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    bad = subprocess.run([sys.executable, "-m", "compat.apps.check", "--specs=missing.py:X"], capture_output=True,
                         text=True, cwd=tmp_path, env=env, timeout=120)
    assert bad.returncode == 2
    assert "file 'missing.py' does not exist" in bad.stderr
    unknown_flag = subprocess.run([sys.executable, "-m", "compat.apps.check", "--no_such_flag"], capture_output=True,
                                  text=True, cwd=tmp_path, env=env, timeout=120)
    assert unknown_flag.returncode == 2 and "no_such_flag" in unknown_flag.stderr


HOSTILE = textwrap.dedent('''
    import sys
    import numpy as np
    import tensorflow as tf
    import compat

    print("user module printing at import")

    def _noisy(i, o, u):
        print("user gradient printing")
        return [u[0]]

    GOOD = compat.GradientSpec("good", tf.sign, lambda i, o, u: [0.5 * u[0]],
                               [np.array([1.0, -2.0, 3.0], np.float32)], op_type="Sign")
    NOISY = compat.GradientSpec("noisy", lambda x: x * 2.0, _noisy, [np.array([1.0, -2.0], np.float32)])
    EXITS = compat.GradientSpec("exits", lambda x: x * 2.0, lambda i, o, u: sys.exit(0), [np.ones(2, np.float32)])
    NONE_FORWARD = compat.GradientSpec("none_forward", lambda x: None, lambda i, o, u: [u[0]], [np.ones(2, np.float32)])
    ONLY_NONE = compat.GradientSpec("only_none", lambda x: x * 2.0, lambda i, o, u: [None], [np.ones(2, np.float32)])

    def FACTORY_EXITS():
        sys.exit(5)

    def interrupt(i, o, u):
        raise KeyboardInterrupt

    INTERRUPTS = compat.GradientSpec("interrupts", lambda x: x * 2.0, interrupt, [np.ones(2, np.float32)])
''')


def _app(tmp_path, *args):
    env = {key: value for key, value in os.environ.items() if key != "TF_CPP_MIN_LOG_LEVEL"}
    return subprocess.run([sys.executable, "-m", "compat.apps.check", *args], capture_output=True, text=True,
                          cwd=tmp_path, env=env, timeout=300)


OUTER = {"outer_tape", "wrap_function", "saved_model"}
"""Contexts whose tape is outside the function holding the op (a loaded SavedModel's too)."""


def test_hostile_specs_are_named_errors_and_json_on_stdout_stays_clean(tmp_path):
    (tmp_path / "hostile.py").write_text(HOSTILE)
    names = ["GOOD", "NOISY", "EXITS", "NONE_FORWARD", "ONLY_NONE"]
    done = _app(tmp_path, "--specs=" + ",".join(f"hostile.py:{n}" for n in names), "--scenarios=sum,weighted",
                "--format=json")
    assert done.returncode == 1, done.stderr  # the hostile specs fail; sys.exit(0) in a gradient is no pass
    report = json.loads(done.stdout)  # user prints went to stderr, not into the report
    assert "user gradient printing" in done.stderr and "user module printing" in done.stderr
    native, outer = {}, set()
    for cell in report["cells"]:
        if cell["native"] and cell["context"] in OUTER and cell["spec"] == "only_none":
            outer.add(cell["status"])  # TensorFlow never runs a backward function whose gradients are all None
        elif cell["native"]:
            native.setdefault(cell["spec"], set()).add(cell["status"])
    assert outer == {"not_called"}
    assert native["good"] <= {"same", "differs"} and native["noisy"] <= {"same", "differs"}
    assert native["only_none"] <= {"same", "differs"}  # counted as called, not `not_called`
    assert native["exits"] == {"error"} and native["none_forward"] == {"error"}
    assert {c["spec"] for c in report["cells"] if c["unexpected"] and c["spec"] != "only_none"} == {
        "exits", "none_forward"}
    assert {c["context"] for c in report["cells"] if c["unexpected"] and c["spec"] == "only_none"} <= OUTER
    # No start-up chatter from TensorFlow unless --verbosity asks for it.
    assert "oneDNN" not in done.stderr


def test_system_exit_in_a_factory_is_a_usage_error_and_ctrl_c_exits_130(tmp_path):
    (tmp_path / "hostile.py").write_text(HOSTILE)
    factory = _app(tmp_path, "--specs=hostile.py:FACTORY_EXITS")
    assert factory.returncode == 2
    assert factory.stderr.strip().splitlines()[-2:] == [
        "compat-check: --specs 'hostile.py:FACTORY_EXITS': calling it raised SystemExit(5) (user code called "
        "sys.exit)", "see `compat-check --help`"]
    interrupted = _app(tmp_path, "--specs=hostile.py:INTERRUPTS", "--scenarios=sum",
                       "--variants=custom_gradient@eager_tape")
    assert interrupted.returncode == 130, interrupted.stderr
    assert interrupted.stderr.strip().splitlines()[-1] == "compat-check: interrupted"


@pytest.mark.parametrize("module", ["compat.apps.check", "compat.apps.audit"])
def test_help_exits_0_and_usage_errors_are_one_line_first(tmp_path, module):
    shown = subprocess.run([sys.executable, "-m", module, "--help"], capture_output=True, text=True, timeout=120)
    assert shown.returncode == 0 and "--format" in shown.stdout
    bad = subprocess.run([sys.executable, "-m", module, "--format=nope", "x"], capture_output=True, text=True,
                         timeout=120)
    lines = bad.stderr.strip().splitlines()
    assert bad.returncode == 2 and len(lines) == 2, bad.stderr
    assert "--format" in lines[0] and "see `" in lines[1] and "--help" in lines[1]


def test_unwritable_output_is_exit_2_before_the_run(tmp_path):
    blocker = tmp_path / "not_a_directory"
    blocker.write_text("x")
    done = _app(tmp_path, f"--output={blocker}/report.json", "--specs=no_such_spec_would_fail_later")
    assert done.returncode == 2
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("compat-check: ") and "not_a_directory" in last and "no_such_spec" not in done.stderr


def test_output_to_a_device_node_writes_it_and_leaves_it_a_device(tmp_path):
    import stat

    device = tmp_path / "null_clone"
    try:
        os.mknod(device, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("mknod needs root (CAP_MKNOD) here")
    assert run_check(tmp_path, "--list") == 0  # warm path only; the report run below writes to the device
    code = run_check(tmp_path, "--specs=scaled_ste", "--scenarios=sum", "--variants=custom_gradient@eager_tape",
                     f"--output={device}")
    assert code == 0 and stat.S_ISCHR(device.stat().st_mode)


@pytest.mark.parametrize("flag, expected", [
    ("--specs=scaled_st", "did you mean `scaled_ste`?"),
    ("--scenarios=gathre", "did you mean `gather`?"),
    ("--variants=custom_gradient@eagr_tape", "did you mean `eager_tape`?"),
    ("--variants=custom_gradeint@*", "did you mean `custom_gradient`?"),
])
def test_misspelt_names_get_a_suggestion(tmp_path, flag, expected):
    with pytest.raises(app.UsageError) as caught:
        run_check(tmp_path, flag)
    assert caught.value.exitcode == 2 and expected in str(caught.value)


def test_loss_expression_runs_as_the_custom_scenario(tmp_path, capsys):
    code = run_check(tmp_path, "--specs=scaled_ste", "--loss=tf.reduce_sum(y * 3.0)", "--show=upstream",
                     "--variants=custom_gradient@eager_tape")
    assert code == 0
    out = capsys.readouterr().out
    assert "  custom (your loss: tf.reduce_sum(y * 3.0))" in out
    assert "received Tensor float32, static shape [4, 3]: [[3. 3. 3.] [3. 3. 3.] [3. 3. 3.] [3. 3. 3.]]" in out
    assert "  sum " not in out  # alone, --loss replaces the built-in scenarios


def test_loss_from_a_file_joins_the_named_scenarios(tmp_path):
    loss_file = tmp_path / "losses.py"
    loss_file.write_text("import tensorflow as tf\n\ndef HALF(y, *rest):\n    return 0.5 * tf.reduce_sum(y)\n")
    output = tmp_path / "r.json"
    code = run_check(tmp_path, "--specs=scaled_ste", f"--loss={loss_file}:HALF", "--scenarios=sum",
                     "--variants=custom_gradient@v1_session", "--format=json", f"--output={output}")
    assert code == 0
    cells = json.loads(output.read_text())["cells"]
    custom = next(c for c in cells if c["scenario"] == "custom" and c["variant"] == "custom_gradient@v1_session")
    assert [c["scenario"] for c in cells if c["variant"] == "custom_gradient@v1_session"] == ["sum", "custom"]
    assert custom["upstream"][0]["value"][0] == [0.5, 0.5, 0.5]


@pytest.mark.parametrize("flags, expected", [
    (["--loss=tf.reduce_sum(y * 3.0"], "--loss 'tf.reduce_sum(y * 3.0': not a Python expression"),
    (["--loss=tf.reduce_sum(z)"], "unknown name(s) z"),
    (["--loss=tf.reduce_sum(y, axis=7)"], "fails on the outputs of spec `scaled_ste`"),
    (["--loss=missing.py:LOSS"], "no file 'missing.py'"),
    (["--loss=0"], "--loss '0' on the outputs of spec `scaled_ste` returns 0 (int), not a tensor"),
    (["--loss=None"], "--loss 'None' on the outputs of spec `scaled_ste` returns None (NoneType), not a tensor"),
    (["--loss=1.5"], "returns 1.5 (float), not a tensor; a loss is a float tensor computed from y or outputs"),
    (["--loss=tf.cast(tf.reduce_sum(y), tf.int32)"], "returns a tensor of dtype int32, not a float one; cast it"),
    (["--loss=tf.constant(1.0)"], "does not depend on them: no gradient reaches them"),
    (["--scenarios=custom"], "the scenario `custom` is your --loss"),
    (["--quiet", "--format=json"], "--quiet applies to --format=table or markdown"),
    (["--show=upstream", "--format=html"], "--show=upstream applies to --format=table or markdown"),
    (["--only_differences", "--format=json"], "JSON is always whole"),
])
def test_bad_loss_and_report_options_are_usage_errors(tmp_path, flags, expected):
    with pytest.raises(app.UsageError) as caught:
        run_check(tmp_path, "--specs=scaled_ste", *flags)
    assert caught.value.exitcode == 2 and expected in str(caught.value)


def test_a_fifo_named_as_the_loss_file_is_a_usage_error_and_never_opened(tmp_path):
    fifo = tmp_path / "fifo.py"
    os.mkfifo(fifo)  # opening it for reading would block until a writer comes
    with pytest.raises(app.UsageError) as caught:
        run_check(tmp_path, "--specs=scaled_ste", f"--loss={fifo}:loss")
    assert caught.value.exitcode == 2
    assert f"--loss '{fifo}:loss': '{fifo}' is a FIFO, not a regular file, so it was not opened" in str(caught.value)


EXITING_LOSSES = {
    "module_sys_exit.py": ("import sys\nsys.exit(3)\n",
                           ": importing 'module_sys_exit.py' failed: SystemExit(3) (user code called sys.exit)"),
    "module_os_exit.py": ("import os\nos._exit(0)\n",
                          ": importing 'module_os_exit.py' failed: os._exit(0) (user code called os._exit"),
    "call_sys_exit.py": ("import sys\n\ndef loss(y):\n    raise SystemExit\n",
                         " fails on the outputs of spec `scaled_ste`: SystemExit(None) (user code called sys.exit)"),
    "call_os_exit.py": ("import os\n\ndef loss(y):\n    os._exit(0)\n",
                        " fails on the outputs of spec `scaled_ste`: os._exit(0) (user code called os._exit"),
}


@pytest.mark.parametrize("name, jobs", [("module_os_exit.py", 1), ("module_os_exit.py", 2), ("module_sys_exit.py", 2),
                                        ("call_sys_exit.py", 1), ("call_os_exit.py", 2)])
def test_a_loss_that_exits_is_a_usage_error_naming_it_never_a_silent_0(tmp_path, name, jobs):
    source, message = EXITING_LOSSES[name]
    (tmp_path / name).write_text(source)
    done = _app(tmp_path, "--specs=scaled_ste,sign_ste", f"--loss={name}:loss", f"--jobs={jobs}",
                "--variants=custom_gradient@eager_tape")
    assert done.returncode == 2 and done.stdout == "", done.stderr
    assert f"compat-check: --loss '{name}:loss'{message}" in done.stderr


def test_os_exit_in_a_gradient_run_in_this_process_is_an_error_cell_not_a_silent_0(tmp_path):
    (tmp_path / "exits.py").write_text(textwrap.dedent('''
        import os
        import numpy as np
        import tensorflow as tf
        import compat

        EXITS = compat.GradientSpec("exits", tf.sign, lambda i, o, u: os._exit(0), [np.ones(2, np.float32)])
    '''))
    done = _app(tmp_path, "--specs=exits.py:EXITS", "--scenarios=sum", "--variants=custom_gradient@eager_tape",
                "--jobs=1", "--format=json")
    assert done.returncode == 1, done.stderr
    (cell,) = json.loads(done.stdout)["cells"]
    assert cell["status"] == "error" and "gradient raised os._exit(0) (user code called os._exit" in cell["message"]
    (tmp_path / "module_os_exit.py").write_text(EXITING_LOSSES["module_os_exit.py"][0])
    spec_file = _app(tmp_path, "--specs=module_os_exit.py", "--jobs=1")
    assert spec_file.returncode == 2 and ("compat-check: --specs 'module_os_exit.py': importing 'module_os_exit.py' "
                                          "failed: os._exit(0) (user code called os._exit") in spec_file.stderr


def test_quiet_prints_only_the_verdict_and_unexpected_cells(tmp_path, capsys):
    assert run_check(tmp_path, "--specs=scaled_ste", "--scenarios=sum", "--quiet",
                     "--variants=custom_gradient@eager_tape") == 0
    out = capsys.readouterr().out
    assert out.splitlines() == ["Unexpected differences in native variants", "  none", "",
                                "OK: every native variant agrees with defun_grad_func@v1_session"]


def test_ctrl_c_kills_every_worker_and_exits_130(tmp_path):
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    # A shell without job control starts a background command (`pytest &`) with SIGINT ignored, and a program
    # keeps an ignored SIGINT, as compat-check rightly does: give the app Python's own handler, as a terminal
    # would, so the test does not depend on how the suite was started.
    start = ("import runpy, signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
             "sys.argv = ['compat-check', '--jobs=2', '--format=json']; "
             "runpy.run_module('compat.apps.check', run_name='__main__', alter_sys=True)")
    run = subprocess.Popen([sys.executable, "-c", start], cwd=tmp_path,
                           env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    group = run.pid  # the app leads its own process group, as a shell's foreground job does
    deadline = time.monotonic() + 120
    while len(_processes_in(group)) < 3 and run.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)  # until the workers have started
    assert len(_processes_in(group)) >= 3, "the workers never started"
    os.killpg(group, signal.SIGINT)  # Ctrl-C reaches every process of the terminal's foreground group
    out, err = run.communicate(timeout=120)
    assert run.returncode == 130, err
    assert err.strip().splitlines()[-1] == "compat-check: interrupted" and out == ""
    while _processes_in(group) and time.monotonic() < deadline:
        time.sleep(0.2)  # multiprocessing's resource tracker leaves once the app is gone
    assert not _processes_in(group)


def _processes_in(group):
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.getpgid(int(entry)) == group and "Z" not in open(f"/proc/{entry}/stat").read().split(")")[1][:3]:
                    found.append(int(entry))
            except OSError:
                pass
    return found



def test_on_a_terminal_the_bar_shows_elapsed_time_and_eta_and_is_gone_before_the_report(tmp_path):
    import pty

    leader, follower = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "compat.apps.check", "--specs=scaled_ste", "--scenarios=sum", "--jobs=1",
         "--variants=custom_gradient@eager_tape"], stdin=follower, stdout=follower, stderr=follower, cwd=tmp_path,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "COLUMNS": "120"})
    os.close(follower)
    chunks = []
    try:
        while chunk := os.read(leader, 65536):
            chunks.append(chunk)
    except OSError:  # the terminal closed with the process
        pass
    finally:
        os.close(leader)
    assert process.wait(timeout=300) == 0
    screen = b"".join(chunks).decode(errors="replace")
    bar, _, report = screen.rpartition("\x1b[?25h")  # rich shows the cursor again when the bar stops
    assert "importing TensorFlow" in bar and "1/1" in bar and "spec x dtype" in bar and "eta" in bar
    assert report.lstrip().startswith("compat-check: TensorFlow") and "OK: every native variant agrees" in report
    assert "━" not in report
