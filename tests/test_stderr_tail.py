"""compat.child.stderr_tail: a child's stderr is quoted bounded, without TensorFlow's notices, fatal lines kept."""

import os
import subprocess
import sys
import tracemalloc

from compat.child.stderr_tail import MAX_LINE_CHARS, stderr_tail, tail_lines

TWENTY_MB = 20 * 1024 * 1024


def _child_stderr(tmp_path, code, name="child.stderr"):
    """Run `code` in a child Python whose stderr goes to a file, as gradcompat's children do; the file."""
    path = tmp_path / name
    with open(path, "wb") as stderr:
        subprocess.run([sys.executable, "-c", code], stderr=stderr, check=False, timeout=300,
                       env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "0"})
    return path


def test_tensorflow_start_up_notices_are_dropped_and_the_error_kept(tmp_path):
    code = "import sys, tensorflow as tf; tf.constant(1.0) + 1; sys.exit('boom: the real error')"
    path = _child_stderr(tmp_path, code)
    assert "boom: the real error" in path.read_text(errors="replace")
    assert stderr_tail(path, max_lines=20) == ["boom: the real error"]


def test_twenty_megabytes_of_stderr_are_read_from_the_end_only(tmp_path):
    lines = _child_stderr(tmp_path, f"import sys; sys.stderr.write('noise line\\n' * ({TWENTY_MB} // 11)); "
                                    "sys.stderr.write('the last words\\n'); sys.exit(3)", "lines.stderr")
    one_line = _child_stderr(tmp_path, f"import sys; sys.stderr.write('x' * {TWENTY_MB}); sys.exit(3)",
                             "one_line.stderr")
    assert lines.stat().st_size > TWENTY_MB - 100 and one_line.stat().st_size == TWENTY_MB
    tracemalloc.start()
    try:
        tail = stderr_tail(lines)
        long_tail = stderr_tail(one_line)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert tail == ["noise line", "noise line", "the last words"]
    (cut,) = long_tail
    assert cut.startswith("…xxx") and cut.endswith(" more characters)") and len(cut) < MAX_LINE_CHARS + 40
    assert peak < 1024 * 1024  # bytes held while reading 2 x 20 MB


def test_a_fatal_line_is_kept_when_a_stack_trace_follows_it():
    text = ("W0000 00:00:1796358627.316086   17498 some_op.cc:99] a warning\n"
            "F0000 00:00:1796358627.316086   17498 tensor.cc:412] Check failed: dims() == 2 (3 vs. 2)\n"
            "*** Check failure stack trace: ***\n" + "".join(f"    @ 0x{i:x} frame {i}\n" for i in range(40)))
    assert tail_lines(text, max_lines=3) == [
        "F0000 00:00:1796358627.316086   17498 tensor.cc:412] Check failed: dims() == 2 (3 vs. 2)",
        "@ 0x26 frame 38", "@ 0x27 frame 39"]


def test_the_log_format_of_releases_before_2_15_is_recognised_too():
    text = ("2026-12-04 06:41:56.316970: I tensorflow/core/util/port.cc:110] oneDNN custom operations are on.\n"
            "2026-12-04 06:41:56.342101: I tensorflow/core/platform/cpu_feature_guard.cc:182] This TensorFlow "
            "binary is optimized\n"
            "2026-12-04 06:41:57.000001: W tensorflow/core/framework/op_kernel.cc:1830] an op warning\n"
            "2026-12-04 06:41:57.000002: F tensorflow/core/framework/tensor.cc:412] dims() == 2\n"
            + "".join(f"    @ 0x{i:x} frame {i}\n" for i in range(5)))
    assert tail_lines(text, max_lines=3) == [
        "2026-12-04 06:41:57.000002: F tensorflow/core/framework/tensor.cc:412] dims() == 2",
        "@ 0x3 frame 3", "@ 0x4 frame 4"]
    assert tail_lines(text, max_lines=10)[0] == (
        "2026-12-04 06:41:57.000001: W tensorflow/core/framework/op_kernel.cc:1830] an op warning")


def test_only_what_was_written_after_the_offset_is_quoted_and_bad_bytes_are_replaced(tmp_path):
    path = tmp_path / "reused.stderr"
    path.write_bytes(b"an earlier batch failed\n")
    offset = path.stat().st_size
    with open(path, "ab") as stderr:
        stderr.write(b"bad bytes \xff\xfe here\n\n   \n")
    assert stderr_tail(path, offset) == ["bad bytes \ufffd\ufffd here"]
    assert stderr_tail(tmp_path / "missing.stderr") == []


def test_a_real_segfault_report_keeps_its_fatal_line_above_the_stack(tmp_path):
    code = ("import faulthandler, ctypes\nfaulthandler.enable()\n" + "def f(n):\n    return f(n - 1) if n else "
            "ctypes.string_at(0)\nf(30)\n")
    path = _child_stderr(tmp_path, code)
    written = [line for line in path.read_text().splitlines() if line.strip()]
    assert written[0] == "Fatal Python error: Segmentation fault" and len(written) > 10  # a stack of 30 frames
    tail = stderr_tail(path)
    assert tail[0] == "Fatal Python error: Segmentation fault" and tail[1:] == [line.strip() for line in written[-2:]]


def test_a_dead_childs_message_quotes_its_fatal_line_first(tmp_path):
    from compat.child.stderr_tail import fatal_or_tail

    path = tmp_path / "err"
    path.write_text("I0000 00:00:1.0 1 port.cc:153] oneDNN custom operations are on.\nsome frame\n"
                    "F1204 00:00:00.000000 1 op.cc:1] Check failed: dims == 2 (3 vs. 2)\n*** Begin stack trace ***\n")
    assert fatal_or_tail(path) == "; fatal: F1204 00:00:00.000000 1 op.cc:1] Check failed: dims == 2 (3 vs. 2)"
    path.write_text("Traceback (most recent call last):\nValueError: boom\n")
    assert fatal_or_tail(path) == "; stderr tail:\nTraceback (most recent call last):\nValueError: boom"
    assert fatal_or_tail(tmp_path / "missing") == ""
