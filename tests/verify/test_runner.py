"""verify_rewrite / verify_files end to end: both sides really run, in child processes, with real TensorFlow.

Each verify call costs two child processes (~4 s on a busy machine), so one module pair carries many
entries: right rewrites, wrong ones, and one missing from the rewrite.
"""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

import pytest

from compat.reports.merged_tools import check_tool_report
from compat.verify import EntriesError, ModuleFileError, VerifyReport, verify_files, verify_rewrite

REPO = Path(__file__).absolute().parent.parent.parent
GOOD_ENTRIES = ("ste", "half_ste", "defun_ste", "python_grad_ste", "two_outputs")
"""Entries of the conftest pair whose rewrite is right; the others are wrong or missing on purpose."""
CORPUS, GOLDEN = REPO / "tests/data/legacy", REPO / "tests/data/legacy_expected"


@pytest.fixture(name="report", scope="module")
def report_fixture(pair: tuple[Path, Path]) -> VerifyReport:
    return verify_files(str(pair[0]), str(pair[1]))


def _cells(report: VerifyReport, entry: str, scenario: str | None = None):
    return [c for c in report.cells if c.entry == entry and scenario in (None, c.scenario)]


def test_every_entry_scenario_and_context_has_a_cell(report):
    assert report.contexts == ("v1_session", "eager_tape", "function_tape")
    assert {"sum", "weighted", "gather", "grad_ys", "second_order", "dynamic_batch"} <= set(report.scenarios)
    assert len(report.cells) == len(report.entries) * (1 + len(report.scenarios)) * len(report.contexts)
    assert report.tensorflow


@pytest.mark.parametrize("entry", GOOD_ENTRIES)
def test_right_rewrites_are_the_same_in_every_scenario_and_context(report, entry):
    cells = _cells(report, entry)
    assert {c.status for c in cells} <= {"same", "skipped", "unsupported"}, report.render_text()
    assert sum(c.status == "same" for c in cells) >= 30


def test_a_scenario_that_does_not_apply_is_skipped_with_the_scenarios_reason(report):
    cell = report.cell("ste", "unused_output", "eager_tape")
    assert cell.status == "skipped" and "one output" in cell.message
    assert report.cell("two_outputs", "unused_output", "eager_tape").status == "same"


def test_a_scenario_the_original_cannot_run_is_unsupported_not_a_failure(report):
    # A Defun grad_func has no second order in TF1; the rewrite's custom_gradient does.
    cell = report.cell("defun_ste", "second_order", "v1_session")
    assert cell.status == "unsupported" and "TensorFlow refuses this for the original" in cell.message


def test_a_gradient_scaled_twice_differs_with_values(report):
    cell = report.cell("wrong_scale", "weighted", "function_tape")
    assert cell.status == "differs"
    (difference,) = cell.differences
    assert (difference.kind, difference.where, difference.index) == ("values", "input_grad[0]", (0,))
    assert difference.max_rel == pytest.approx(1.0)
    assert report.cell("wrong_scale", "forward", "v1_session").status == "same"


def test_a_changed_forward_differs_in_the_outputs(report):
    cell = report.cell("wrong_forward", "forward", "eager_tape")
    assert cell.status == "differs" and cell.differences[0].where == "output[0]"
    assert report.cell("wrong_forward", "sum", "eager_tape").status == "same"


def test_a_rewrite_that_fails_where_the_original_runs_differs_with_the_error(report):
    # `.numpy()` in a gradient works eagerly only.
    assert report.cell("numpy_in_grad", "sum", "eager_tape").status == "same"
    cell = report.cell("numpy_in_grad", "sum", "function_tape")
    assert cell.status == "differs" and cell.differences[0].kind == "error"
    assert "numpy" in cell.differences[0].detail


def test_an_entry_missing_from_the_rewrite_is_an_error_cell(report):
    cells = _cells(report, "missing")
    assert {c.status for c in cells} == {"error"} and "defines no function `missing`" in cells[0].message
    assert not report.ok and "missing" in {c.entry for c in report.failures}


def test_upstreams_are_compared_where_both_sides_are_instrumented(report):
    # RegisterGradient (original) and tf.custom_gradient (rewrite) are wrapped to record what they receive.
    assert report.cell("half_ste", "weighted", "v1_session").upstream == "same (1 call(s))"
    assert report.cell("half_ste", "gather", "eager_tape").upstream == "same (1 call(s))"
    assert report.cell("python_grad_ste", "grad_ys", "function_tape").upstream == "same (1 call(s))"
    # An override onto the built-in "Identity" gradient and a Defun grad_func cannot be wrapped.
    for entry in ("ste", "defun_ste"):
        assert "observed on one side only" in report.cell(entry, "sum", "eager_tape").upstream
    assert report.cell("half_ste", "stop_gradient", "eager_tape").upstream == "not called on either side"


def test_text_and_json_name_every_failure(report):
    text = report.render_text()
    assert "NOT PROVEN EQUIVALENT" in text and "wrong_scale / sum / v1_session, eager_tape, function_tape" in text
    document = report.to_json()
    assert document["ok"] is False and document["summary"]["differs"] > 0
    check_tool_report("report", json.loads(json.dumps(document)))  # compat/reports/verify_report.schema.json
    assert {"entry", "scenario", "context", "status", "differences", "upstream"} <= set(document["cells"][0])


def test_verify_rewrite_takes_the_rewritten_source_and_a_passing_pair_is_ok(pair, sources):
    report = verify_rewrite(str(pair[0]), sources[1], {"half_ste": [("float64", [2, 3])]},
                            contexts=("v1_session", "eager_tape"))
    assert report.ok, report.render_text()
    assert report.rewritten == "<rewritten source>" and report.entries == ("half_ste",)
    assert report.cell("half_ste", "mean", "eager_tape").status == "same"


def test_failures_in_user_code_become_error_cells_never_exceptions(tmp_path, write_pair):
    legacy, rewritten = write_pair(tmp_path, 'GRADCOMPAT_ENTRIES = {"f": [("float32", [2])]}\nraise SystemExit(3)\n',
                                   "import os\nos._exit(7)\n")
    report = verify_files(str(legacy), str(rewritten), contexts=("eager_tape",))
    assert {c.status for c in report.cells} == {"error"}
    message = report.cells[0].message
    assert "SystemExit: 3" in message and "exited with code 7" in message


def test_a_module_that_never_returns_times_out(tmp_path, write_pair):
    hang = 'GRADCOMPAT_ENTRIES = {"f": [("float32", [2])]}\nimport time\nwhile True:\n    time.sleep(1)\n'
    legacy, rewritten = write_pair(tmp_path, hang, hang)
    started = time.monotonic()
    report = verify_files(str(legacy), str(rewritten), timeout_s=2)
    assert time.monotonic() - started < 30  # a hang would last forever: the limit is 2 s plus process start-ups
    assert {c.status for c in report.cells} == {"error"} and "timed out after 2 s" in report.cells[0].message


def test_bad_arguments_raise_saying_how_to_fix(tmp_path, write_pair):
    legacy, rewritten = write_pair(tmp_path, "x = 1\n", "x = 1\n")
    with pytest.raises(EntriesError, match="GRADCOMPAT_ENTRIES"):
        verify_files(str(legacy), str(rewritten))
    with pytest.raises(ValueError, match="choose from"):
        verify_files(str(legacy), str(rewritten), {"f": [("float32", [2])]}, contexts=("graph",))


def _raised_within(seconds: float, call) -> BaseException | None:
    """What `call()` raised, run in a thread that may block forever (a FIFO opened for reading): the test fails
    instead of hanging when it does not end in time."""
    raised: list[BaseException | None] = []

    def target() -> None:
        try:
            call()
            raised.append(None)
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            raised.append(exc)
    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    assert raised, f"still running after {seconds} s: a special file was opened and blocks"
    return raised[0]


@pytest.mark.parametrize("bad", ["fifo", "missing", "directory", "device"])
@pytest.mark.parametrize("side", ["original", "rewritten"])
def test_a_module_path_that_is_not_a_regular_file_is_refused_at_once_naming_it(tmp_path, write_pair, bad, side):
    legacy, rewritten = write_pair(tmp_path, "x = 1\n", "x = 1\n")
    target = tmp_path / "bad.py"
    if bad == "fifo":
        os.mkfifo(target)
    elif bad == "directory":
        target.mkdir()
    paths = {"original": str(legacy), "rewritten": str(rewritten)}
    paths[side] = "/dev/null" if bad == "device" else str(target)
    started = time.monotonic()
    exc = _raised_within(20, lambda: verify_files(paths["original"], paths["rewritten"], {"f": [("float32", [2])]}))
    assert isinstance(exc, ModuleFileError), exc
    assert str(exc).startswith(f"{paths[side]}: ") and f"(the {side} module)" in str(exc), exc
    assert time.monotonic() - started < 5  # refused before any child process starts
    if side == "original":
        exc = _raised_within(20, lambda: verify_rewrite(paths["original"], "x = 1\n", {"f": [("float32", [2])]}))
        assert isinstance(exc, ModuleFileError), exc


def _corpus() -> list[Path]:
    if not (CORPUS.is_dir() and GOLDEN.is_dir()):
        return []
    return sorted(path for path in CORPUS.glob("*.py") if not path.name.startswith("_"))


def _golden(legacy: Path) -> Path:
    candidates = [GOLDEN / legacy.name, GOLDEN / f"{legacy.stem}.expected.py", GOLDEN / f"{legacy.name}.expected"]
    found = [path for path in candidates if path.is_file()]
    assert found, f"{legacy.name} has no golden rewrite; looked for {[str(p) for p in candidates]}"
    return found[0]


@pytest.mark.skipif(not _corpus(), reason="tests/data/legacy/ and tests/data/legacy_expected/ are not there yet: "
                                          "the rewriter's legacy corpus and its golden rewrites")
@pytest.mark.parametrize("legacy", _corpus(), ids=lambda path: path.stem)
def test_every_legacy_module_is_equivalent_to_its_golden_rewrite(legacy):
    report = verify_files(str(legacy), str(_golden(legacy)))
    assert report.ok, report.render_text()


def test_an_original_that_fails_every_gradient_while_the_rewrite_runs_is_not_equivalent(trust_report):
    # A RegisterGradient returning shape [3] for a [4] input: TF1 raises, TF2's tape accepts it.
    cell = trust_report.cell("bad_shape", "sum", "eager_tape")
    assert cell.status == "differs" and "Incompatible shapes" in cell.message
    compared = {c.scenario for c in trust_report.cells if c.entry == "bad_shape" and c.status == "same"}
    assert compared <= {"forward", "stop_gradient", "dynamic_batch"}, compared  # where no [4] gradient is checked
    assert not trust_report.ok


GET_VARIABLE = '''
import tensorflow as tf

GRADCOMPAT_ENTRIES = {"scaled": [("float32", [3])]}


def scaled(x):
    w = tf.get_variable("W", shape=[3], initializer=tf.ones_initializer())
    with tf.get_default_graph().gradient_override_map({"Sign": "Identity"}):
        return tf.sign(x) * w
'''

GET_VARIABLE_REWRITE = '''
import tensorflow as tf


@tf.custom_gradient
def _sign(x):
    return tf.sign(x), lambda dy: dy


def scaled(x):
    w = tf.compat.v1.get_variable("W", shape=[3], initializer=tf.compat.v1.ones_initializer())
    return _sign(x) * w
'''


def test_a_contexts_cells_do_not_depend_on_the_contexts_run_beside_it(tmp_path, write_pair):
    legacy, rewritten = write_pair(tmp_path, GET_VARIABLE, GET_VARIABLE_REWRITE)
    alone = verify_files(str(legacy), str(rewritten), contexts=("eager_tape",), scenarios=["forward", "sum", "gather"])
    beside = verify_files(str(legacy), str(rewritten), contexts=("eager_tape", "function_tape"),
                          scenarios=["forward", "sum", "gather"])
    assert alone.ok, alone.render_text()
    assert [c for c in beside.cells if c.context == "eager_tape"] == list(alone.cells)
    # tf.compat.v1.get_variable cannot run inside a tf.function: that context's own cells say so.
    assert beside.cell("scaled", "forward", "function_tape").status == "differs"


def test_a_module_with_relative_imports_is_verified_as_part_of_its_package(tmp_path):
    package = tmp_path / "mypkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "scales.py").write_text("HALF = 0.5\n")
    (package / "ops.py").write_text(
        "import tensorflow as tf\nfrom .scales import HALF\n\nGRADCOMPAT_ENTRIES = {'half': [('float32', [3])]}\n\n\n"
        "@tf.RegisterGradient('RelHalf')\ndef _half(op, grad):\n    return HALF * grad\n\n\n"
        "def half(x):\n    with tf.get_default_graph().gradient_override_map({'Sign': 'RelHalf'}):\n"
        "        return tf.sign(x)\n")
    rewrite = ("import tensorflow as tf\nfrom .scales import HALF\n\n\n@tf.custom_gradient\ndef half(x):\n"
               "    return tf.sign(x), lambda dy: HALF * dy\n")
    report = verify_rewrite(str(package / "ops.py"), rewrite, contexts=("eager_tape",), scenarios=["forward", "sum"])
    assert report.ok, report.render_text()


@pytest.mark.parametrize("encoding, header", [("latin-1", "# -*- coding: latin-1 -*-\n"), ("utf-8-sig", "")])
def test_a_module_in_its_declared_encoding_or_with_a_bom_is_verified(tmp_path, encoding, header):
    body = "# Gradient f\xfcr sign\nimport tensorflow as tf\n\n"
    source = (header + body + "GRADCOMPAT_ENTRIES = {'ste': [('float32', [3])]}\n\n\ndef ste(x):\n"
              "    with tf.get_default_graph().gradient_override_map({'Sign': 'Identity'}):\n"
              "        return tf.sign(x)\n")
    path = tmp_path / "ops.py"
    path.write_bytes(source.encode(encoding))
    rewrite = header + body + "\n@tf.custom_gradient\ndef ste(x):\n    return tf.sign(x), lambda dy: dy\n"
    report = verify_rewrite(str(path), rewrite, contexts=("eager_tape",), scenarios=["forward", "sum"])
    assert report.ok, report.render_text()


ZERO_CONFIG = '''
import tensorflow as tf
from tensorflow.python.framework import function


@function.Defun(tf.float32, tf.float32)
def _clip_grad(x, dy):
    return dy * tf.cast(tf.abs(x) <= 1.0, dy.dtype)


@function.Defun(tf.float32, grad_func=_clip_grad)
def clipped_sign(x):
    return tf.sign(x)


def matmul_ste(x, w):
    with tf.get_default_graph().gradient_override_map({"Sign": "Identity"}):
        return tf.matmul(tf.sign(x), w)
'''

ZERO_CONFIG_REWRITE = '''
import tensorflow as tf


@tf.custom_gradient
def clipped_sign(x):
    return tf.sign(x), lambda dy: dy * tf.cast(tf.abs(x) <= 1.0, dy.dtype)


@tf.custom_gradient
def _sign(x):
    return tf.sign(x), lambda dy: dy


def matmul_ste(x, w):
    return tf.matmul(_sign(x), w)
'''


def test_without_declared_entries_they_are_inferred_and_the_report_says_how(tmp_path, write_pair):
    legacy, rewritten = write_pair(tmp_path, ZERO_CONFIG, ZERO_CONFIG_REWRITE)
    report = verify_files(str(legacy), str(rewritten), contexts=("eager_tape",), scenarios=["forward", "weighted"])
    assert report.ok, report.render_text()
    assert report.entries == ("clipped_sign", "matmul_ste")
    assert report.notes["clipped_sign"].startswith("inputs inferred: float32[3], the first of ranks 1-4")
    # A matmul needs rank 2: rank 1 is tried, refused by the original, and said.
    assert report.notes["matmul_ste"].startswith("inputs inferred: float32[3, 3], float32[3, 3]")
    methods = ZERO_CONFIG + "\n\nclass Net:\n    def call(self, x):\n        return clipped_sign(x)\n\n" \
        "    def guided(self, x):\n        with tf.get_default_graph().gradient_override_map({'Relu': 'Identity'}):\n" \
        "            return tf.nn.relu(x)\n"
    legacy.write_text(methods)
    partial = verify_files(str(legacy), str(rewritten), contexts=("eager_tape",), scenarios=["forward", "sum"])
    assert not partial.ok and "method" in partial.not_verified["class Net"]


QUANTIZE = '''
import tensorflow as tf

GRADCOMPAT_ENTRIES = {"quantize": [("float32", [2, 3]), 2]}


def quantize(x, bits):
    n = float(2 ** bits - 1)
    with tf.get_default_graph().gradient_override_map({"Round": "Identity"}):
        return tf.round(x * n) / n
'''

QUANTIZE_REWRITE = '''
import tensorflow as tf


@tf.custom_gradient
def _round(x):
    return tf.round(x), lambda dy: dy


def quantize(x, bits):
    n = float(2 ** bits - 1)
    return _round(x * n) / n
'''


def test_arguments_that_are_not_tensors_are_passed_as_declared(tmp_path, write_pair):
    legacy, rewritten = write_pair(tmp_path, QUANTIZE, QUANTIZE_REWRITE)
    report = verify_files(str(legacy), str(rewritten), contexts=("eager_tape",), scenarios=["forward", "weighted"])
    assert report.ok, report.render_text()
    legacy.write_text(QUANTIZE.replace('GRADCOMPAT_ENTRIES = {"quantize": [("float32", [2, 3]), 2]}', ""))
    inferred = verify_files(str(legacy), str(rewritten), contexts=("eager_tape",), scenarios=["forward", "sum"])
    assert not inferred.ok
    assert ('GRADCOMPAT_ENTRIES = {"quantize": [("float32", [3]) or <x>, ("float32", [3]) or <bits>]}'
            in inferred.not_verified["quantize"])
