"""Variant selections for tests: `"native"`, `"cross"`, `"all"`, globs like `"*@v1_session"`, or a list."""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence

KEYWORDS = ("native", "cross", "all")
"""Selection words besides variant names and globs."""

Selection = str | Sequence[str]


def resolve_variants(selection: Selection = "native") -> tuple[str, ...]:
    """The variant names `selection` picks, in registry order.

    Args:
      selection: `"native"` (each mechanism used as documented), `"cross"` (the others), `"all"`, a
        `mechanism@context` name, a glob (`"*@v1_session"`, `"custom_gradient@*"`), a comma-separated
        string of those, or a list of them; the union is taken.

    Raises:
      ValueError: a part matches no variant; the message lists the valid names.
    """
    from compat.variants import NATIVE_VARIANTS, VARIANTS  # imports TensorFlow: only when a test asks

    parts = _parts(selection)
    if not parts:
        raise ValueError(f"empty variant selection {selection!r}: pass 'native', 'cross', 'all', a glob like "
                         f"'*@eager_tape' or a list of variant names")
    chosen: set[str] = set()
    for part in parts:
        if part == "native":
            matches = set(NATIVE_VARIANTS)
        elif part == "cross":
            matches = set(VARIANTS) - set(NATIVE_VARIANTS)
        elif part == "all":
            matches = set(VARIANTS)
        else:
            matches = set(fnmatch.filter(VARIANTS, part))
        if not matches:
            raise ValueError(f"variant selection {part!r} matches no variant: use one of {list(KEYWORDS)}, a glob "
                             f"like '*@v1_session' or 'custom_gradient@*', or a name from {list(VARIANTS)}")
        chosen |= matches
    return tuple(v for v in VARIANTS if v in chosen)


def _parts(selection: Selection) -> list[str]:
    if isinstance(selection, str):
        selection = selection.split(",")
    elif not isinstance(selection, Sequence):
        raise TypeError(f"a variant selection is a string or a list of strings, got {type(selection).__name__}")
    return [part.strip() for part in selection if part.strip()]
