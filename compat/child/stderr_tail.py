"""The end of a child process's stderr, bounded whatever the child wrote: what a failure message may quote.

A child that writes 20 MB to stderr and dies must not put 20 MB into every cell it fails: only the last
`max_bytes` of the file are read, decoded with replacement, TensorFlow's own notices are dropped (its start-up
chatter is printed from C++ whatever the log level), and the lines are capped in number and length. Fatal lines
(`F0000 ... ] Check failed: ...`, absl/glog's FATAL; `Fatal Python error`, `terminate called ...`) are kept even
when a stack trace follows them.

    lines = stderr_tail(path, start=offset)            # ["ValueError: boom"]
    message += "; stderr: " + " | ".join(lines) if lines else ""
"""

from __future__ import annotations

import os
import re
from pathlib import Path

MAX_BYTES = 64 * 1024
"""Bytes read from the end of the file: enough for a Python traceback, bounded for anything else."""
MAX_LINES = 3
MAX_LINE_CHARS = 500


def _log_line(severity: str) -> str:
    """A regex for the head of a glog/absl line of `severity` (I, W, F), in TensorFlow's two formats: absl's
    `I0000 00:00:00.000000   123 port.cc:153] ` (2.15 on) and `2026-01-01 00:00:00.000000: I tensorflow/...:110] `."""
    return rf"^(?:{severity}\d{{4}} [\d:.]+\s+\d+ |\d{{4}}-\d\d-\d\d [\d:.]+: {severity} )\S+:\d+\] "


_NOTICES = (
    # absl's line before its own initialisation, printed once per process by TensorFlow's C++ logging.
    re.compile(r"^WARNING: All log messages before absl::InitializeLog\(\) is called are written to STDERR$"),
    # glog/absl INFO lines (oneDNN's port.cc, cpu_feature_guard.cc, ...) and TensorFlow's WARNING notices that
    # are no failure: the rendezvous shutdown after a failed op, CUDA/TensorRT probing, MLIR pass chatter.
    re.compile(_log_line("I")),
    re.compile(_log_line("W") + r"(.*(cuda|gpu|TensorRT)|Local rendezvous is aborting)"),
    re.compile(r"mlir_graph_optimization_pass"),
    re.compile(r"^To enable the following instructions: .*rebuild TensorFlow with the appropriate compiler flags\.$"),
    # tf.compat.v1 deprecation notices (legacy code triggers them by the dozen).
    re.compile(r"Instructions for updating:$|is deprecated and will be removed|non-resource variables are not "
               r"supported|disable_resource_variables"),
)
_FATAL = re.compile(_log_line("F") + r"|Check failed: |^Fatal Python error|^terminate called|"
                    r"Segmentation fault|^Aborted")


def stderr_tail(path: str | os.PathLike[str], start: int = 0, max_lines: int = MAX_LINES,
                max_line_chars: int = MAX_LINE_CHARS, max_bytes: int = MAX_BYTES) -> list[str]:
    """The last non-blank lines a child wrote to the file `path` from byte offset `start` on.

    At most `max_bytes` are read, from the end; TensorFlow's notices are dropped; at most `max_lines` lines
    of at most `max_line_chars` characters each come back (a longer one is cut, saying how much was left
    out); the last fatal line is among them if the bytes read hold one. [] if the file cannot be read.
    """
    try:
        text = read_end(path, start, max_bytes)
    except OSError:
        return []
    return tail_lines(text, max_lines, max_line_chars)


def read_end(path: str | os.PathLike[str], start: int = 0, max_bytes: int = MAX_BYTES) -> str:
    """The text of at most the last `max_bytes` bytes of `path` after offset `start`, decoded with
    replacement; if the read begins inside a line, that line starts with "…"."""
    with open(Path(path), "rb") as handle:
        size = handle.seek(0, os.SEEK_END)
        begin = max(start, size - max_bytes)
        handle.seek(begin)
        data = handle.read(max(0, size - begin))
    if begin > start:
        newline = data.find(b"\n")
        # Inside a line: drop its end (cut mid-character, perhaps), unless that is all there is.
        data = data[newline + 1:] if 0 <= newline < len(data) - 1 else b"\xe2\x80\xa6" + data
    return data.decode("utf-8", errors="replace")


def tail_lines(text: str, max_lines: int = MAX_LINES, max_line_chars: int = MAX_LINE_CHARS) -> list[str]:
    """The last `max_lines` non-blank, stripped lines of `text` that are not TensorFlow notices, each cut to
    `max_line_chars`; the last fatal line is kept in place of the oldest line if it would fall out."""
    lines = [line.strip() for line in text.splitlines()]
    kept = [line for line in lines if line and not any(notice.search(line) for notice in _NOTICES)]
    tail = kept[-max_lines:] if max_lines > 0 else []
    fatal = [line for line in kept if _FATAL.search(line)]
    if fatal and tail and fatal[-1] not in tail:  # a stack trace after it filled the tail
        tail = [fatal[-1], *tail[1:]]
    return [_cut(line, max_line_chars) for line in tail]


def _cut(line: str, limit: int) -> str:
    if len(line) <= limit:
        return line
    return f"{line[:limit]}… ({len(line) - limit} more characters)"


def fatal_or_tail(path: str | os.PathLike[str], max_lines: int = 12) -> str:
    """For a message: "; fatal: <line>" when the child's stderr holds a fatal line (a TensorFlow CHECK failure,
    an abort), else "; stderr tail:" and its last lines, or "" when it printed nothing worth showing."""
    lines = stderr_tail(path, max_lines=max_lines)
    fatal = [line for line in lines if _FATAL.search(line)]
    if fatal:
        return "; fatal: " + fatal[-1]
    return ("; stderr tail:\n" + "\n".join(lines)) if lines else ""
