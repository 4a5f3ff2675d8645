"""compat.apps._progress: a bar on a terminal, timed plain lines elsewhere, nothing with --noprogress."""

import io
import os
import pty
import select

from compat.apps import _progress
from compat.apps._progress import LineProgress, TerminalProgress, progress_on_stderr


def _drain(leader: int) -> str:
    """Everything written to the terminal so far: one read of a pty returns only what one write delivered when the
    machine is busy, so read until it stays quiet for half a second."""
    chunks = []
    while select.select([leader], [], [], 0.5)[0]:
        chunk = os.read(leader, 65536)
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks).decode(errors="replace")


def test_lines_name_each_phase_then_come_at_most_once_per_interval_and_at_the_end(monkeypatch):
    now = [100.0]
    monkeypatch.setattr(_progress.time, "monotonic", lambda: now[0])
    stream = io.StringIO()
    progress = LineProgress("compat-check", stream, interval=10.0)
    progress.phase("importing TensorFlow")
    progress.start(4, "spec x dtype")
    for seconds, label in ((3, "a float32"), (12, "b float32"), (14, "c float32"), (20, "d float32")):
        now[0] = 100.0 + seconds
        progress.advance(label)
    progress.close()
    assert stream.getvalue().splitlines() == [
        "compat-check: importing TensorFlow (0:00:00 elapsed)",
        "compat-check: 2/4 spec x dtype, 0:00:12 elapsed, about 0:00:12 left: b float32",
        "compat-check: 4/4 spec x dtype, 0:00:20 elapsed: d float32",
    ]


def test_a_run_that_stops_early_says_so_once():
    stream = io.StringIO()
    progress = LineProgress("compat-check", stream, interval=3600)
    progress.start(3, "files")
    progress.advance("x")
    progress.close()
    progress.close()
    assert stream.getvalue() == "compat-check: 1/3 files, 0:00:00 elapsed, about 0:00:00 left; stopped\n"


def test_a_long_unit_still_gets_a_line_now_and_then_and_none_after_the_end():
    import time

    stream = io.StringIO()
    progress = LineProgress("compat-check", stream, interval=0.05, heartbeat=0.2)
    progress.start(2, "spec x dtype")
    time.sleep(0.7)  # the first unit takes long: the log must not look hung
    progress.advance("a float32")
    progress.advance("b float32")
    progress.close()
    lines = stream.getvalue().splitlines()
    beats = [line for line in lines if line.endswith("; still working")]
    assert 2 <= len(beats) <= 4 and beats[0].startswith("compat-check: 0/2 spec x dtype, "), lines
    assert lines[-1].startswith("compat-check: 2/2 spec x dtype") and lines[-1].endswith(": b float32"), lines
    time.sleep(0.3)
    assert stream.getvalue().splitlines() == lines  # the heartbeat stopped with close()


def test_a_closed_stream_never_fails_the_run():
    stream = io.StringIO()
    stream.close()
    progress = LineProgress("compat-check", stream)
    progress.phase("importing TensorFlow")
    progress.start(1, "files")
    progress.advance("x")


def test_the_choice_follows_the_flag_and_whether_stderr_is_a_terminal():
    not_a_terminal = io.StringIO()
    assert progress_on_stderr("p", False, stream=not_a_terminal) is None
    assert isinstance(progress_on_stderr("p", None, stream=not_a_terminal), LineProgress)
    assert progress_on_stderr("p", None, lines_by_default=False, stream=not_a_terminal) is None
    assert isinstance(progress_on_stderr("p", True, lines_by_default=False, stream=not_a_terminal), LineProgress)
    leader, follower = pty.openpty()
    try:
        with os.fdopen(follower, "w", closefd=False) as terminal:
            progress = progress_on_stderr("p", None, stream=terminal)
            assert isinstance(progress, TerminalProgress)
            progress.start(2, "files")
            progress.advance("first")
            progress.advance("second")
            progress.close()
        drawn = _drain(leader)
    finally:
        os.close(leader)
        os.close(follower)
    assert "2/2" in drawn and "files" in drawn and "second" in drawn


def test_the_bar_stays_visible_while_its_streams_descriptor_points_elsewhere(tmp_path):
    """compat-check sends fd 2 to a file while TensorFlow imports; the bar keeps its own copy of the terminal."""
    leader, follower = pty.openpty()
    try:
        with os.fdopen(os.dup(follower), "w") as terminal:
            progress = TerminalProgress(terminal)
            saved = os.dup(terminal.fileno())
            with open(tmp_path / "elsewhere", "w") as elsewhere:
                os.dup2(elsewhere.fileno(), terminal.fileno())
                try:
                    progress.phase("importing TensorFlow")
                finally:
                    os.dup2(saved, terminal.fileno())
                    os.close(saved)
            progress.phase("loading specs")  # what the bar shows when it stops
            progress.close()
        drawn = _drain(leader)
    finally:
        os.close(leader)
        os.close(follower)
    assert "importing TensorFlow" in drawn
    assert "importing" not in (tmp_path / "elsewhere").read_text()
