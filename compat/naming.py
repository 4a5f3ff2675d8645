"""Numbers for names TensorFlow needs unique, counted per name so a spec's names do not depend on other specs."""

from __future__ import annotations

import collections
import re
import threading

_taken: collections.Counter[tuple[str, str]] = collections.Counter()
_lock = threading.Lock()


def next_number(namespace: str, key: str) -> int:
    """0, 1, 2, ... for successive calls with the same (namespace, key) in this process.

    Counting per key, not process-wide, keeps a spec's op and variable names independent of the other specs the
    process built. They still depend on the process's history: a process that built the same spec before (a
    notebook re-run, a test process) is further on, since TensorFlow's gradient registry never forgets a name.
    """
    with _lock:
        number = _taken[namespace, key]
        _taken[namespace, key] += 1
    return number


def ascii_word(name: str, *, keep: str = "", fallback: str = "spec") -> str:
    """`name` with every run of characters other than ASCII letters, digits and `keep` made one `_`, trimmed."""
    allowed = re.escape(keep)
    return re.sub(rf"[^A-Za-z0-9{allowed}]+", "_", name).strip("_" + keep) or fallback
