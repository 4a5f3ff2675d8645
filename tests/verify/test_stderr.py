"""A dead child's last words: its fatal line first, else a short tail without TensorFlow's notices."""

from __future__ import annotations

from compat.verify._stderr import fatal_or_tail, tail_lines


def test_the_fatal_line_is_quoted(tmp_path):
    path = tmp_path / "err"
    path.write_text("I0000 00:00:1.0 1 port.cc:153] oneDNN custom operations are on.\nsome frame\n"
                    "F1204 00:00:00.000000 1 op.cc:1] Check failed: dims == 2 (3 vs. 2)\n*** Begin stack trace ***\n")
    assert fatal_or_tail(str(path)) == "; fatal: F1204 00:00:00.000000 1 op.cc:1] Check failed: dims == 2 (3 vs. 2)"


def test_a_huge_stderr_gives_a_short_tail_without_notices(tmp_path):
    path = tmp_path / "err"
    with open(path, "w") as handle:
        handle.write("x" * 20_000_000)  # 20 MB on one line, then what matters
        handle.write("\nWARNING: All log messages before absl::InitializeLog() is called are written to STDERR\n"
                     "Traceback (most recent call last):\nValueError: boom\n")
    lines = tail_lines(str(path))
    assert lines[-2:] == ["Traceback (most recent call last):", "ValueError: boom"]
    assert sum(map(len, lines)) < 2_000 and not any("absl::InitializeLog" in line for line in lines)
    assert fatal_or_tail(str(tmp_path / "missing")) == ""
