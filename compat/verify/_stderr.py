"""What a dead child said last: its fatal line (`Check failed: ...`) or the end of its stderr, bounded in size."""

from __future__ import annotations

import os
import re

_TAIL_BYTES = 64 * 1024
_TAIL_LINES = 12
_LINE_CHARS = 500
_FATAL = re.compile(r"Check failed|^F\d{4} |Fatal Python error|terminate called|Segmentation fault|Aborted")
_NOTICE = re.compile(
    r"oneDNN custom operations|cpu_feature_guard|rebuild TensorFlow with the appropriate compiler flags|"
    r"To enable the following instructions|All log messages before absl::InitializeLog|"
    r"mlir_graph_optimization_pass|^I\d{4} |^W\d{4} .*(cuda|gpu|TensorRT)|Instructions for updating|"
    r"non-resource variables are not supported|disable_resource_variables|is deprecated and will be removed")


def tail_lines(path: str) -> list[str]:
    """The last lines of the file at `path` (at most 64 KiB read, 12 lines of 500 characters), TensorFlow's
    start-up and deprecation notices left out."""
    try:
        with open(path, "rb") as handle:
            handle.seek(max(0, os.fstat(handle.fileno()).st_size - _TAIL_BYTES))
            data = handle.read(_TAIL_BYTES)
    except OSError:
        return []
    lines = [line.rstrip() for line in data.decode("utf-8", "replace").splitlines()]
    kept = [line if len(line) <= _LINE_CHARS else line[:_LINE_CHARS] + " ..." for line in lines
            if line.strip() and not _NOTICE.search(line)]
    return kept[-_TAIL_LINES:]


def fatal_or_tail(path: str) -> str:
    """"; fatal: <line>" when the child printed a fatal line (TensorFlow's CHECK failures among them), else
    "; stderr tail: ..." with its last lines, or "" when it printed nothing worth showing."""
    lines = tail_lines(path)
    fatal = [line for line in lines if _FATAL.search(line)]
    if fatal:
        return "; fatal: " + fatal[0].strip()
    return ("; stderr tail:\n" + "\n".join(lines)) if lines else ""
