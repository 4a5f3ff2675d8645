"""Keep a module's final line endings: LibCST drops the last `\\r` of a CR-only file each time it parses it."""

from __future__ import annotations


def _trailing_crs(text: str) -> int:
    return len(text) - len(text.rstrip("\r"))


def keep_final_newlines(original: str, code: str) -> str:
    """`code` (rewritten from `original`) ending in as many carriage returns as `original` does.

    LibCST parses `"x = 1\\r"` as a module without a trailing newline (`has_trailing_newline` is False; `"\\n"`
    and `"\\r\\n"` are right), so every parse and code generation loses one final `\\r`. The rewriter never
    changes what follows a module's last statement, so the original's count is the one to keep.
    """
    missing = _trailing_crs(original) - _trailing_crs(code)
    return code + "\r" * missing if original.endswith("\r") and missing > 0 else code
