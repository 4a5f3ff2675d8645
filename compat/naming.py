"""Numbers for names TensorFlow needs unique, counted per name so a spec's names do not depend on other specs."""

from __future__ import annotations

import collections
import re
import threading

_taken: collections.Counter[tuple[str, str]] = collections.Counter()
_lock = threading.Lock()


def next_number(namespace: str, key: str) -> int:
    """0, 1, 2, ... for successive calls with the same (namespace, key) in this process.

    Counting per key, not process-wide, makes a spec's op and variable names the same whether its cells run in one
    process or are spread over worker processes (`jobs=`) with other specs built before them.
    """
    with _lock:
        number = _taken[namespace, key]
        _taken[namespace, key] += 1
    return number


def ascii_word(name: str, *, keep: str = "", fallback: str = "spec") -> str:
    """`name` with every run of characters other than ASCII letters, digits and `keep` made one `_`, trimmed."""
    allowed = re.escape(keep)
    return re.sub(rf"[^A-Za-z0-9{allowed}]+", "_", name).strip("_" + keep) or fallback
