"""Variants: every `mechanism@context` pair, and which of them are native (used as documented)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from compat.errors import UnknownNameError
from compat.registry import (
    ALL_CONTEXT_NAMES,
    ALL_VARIANTS,
    MECHANISM_NAMES,
    NATIVE_VARIANTS,
    OPT_IN_VARIANTS,
    VARIANTS,
    is_native_pair,
)

if TYPE_CHECKING:
    from compat.contexts import Context
    from compat.mechanisms import Mechanism

__all__ = ["ALL_VARIANTS", "NATIVE_VARIANTS", "OPT_IN_VARIANTS", "VARIANTS", "is_native", "parse_variant",
           "select", "variant_names"]


def variant_names() -> tuple[str, ...]:
    return VARIANTS


def parse_variant(variant: str) -> tuple[Mechanism, Context]:
    """The mechanism and context of `mechanism@context` (their implementations: this imports TensorFlow); an
    UnknownNameError (a ValueError) lists the valid names otherwise."""
    from compat.contexts import ALL_CONTEXTS
    from compat.mechanisms import MECHANISMS

    mechanism_name, context_name = _split(variant)
    return MECHANISMS[mechanism_name], ALL_CONTEXTS[context_name]


def _split(variant: str) -> tuple[str, str]:
    """The registered mechanism and context names of `mechanism@context`, or an UnknownNameError."""
    mechanism_name, at, context_name = variant.partition("@")
    if not at or mechanism_name not in MECHANISM_NAMES or context_name not in ALL_CONTEXT_NAMES:
        raise UnknownNameError(
            f"unknown variant {variant!r}: a variant is MECHANISM@CONTEXT with MECHANISM one of "
            f"{sorted(MECHANISM_NAMES)} and CONTEXT one of {sorted(ALL_CONTEXT_NAMES)}, e.g. "
            "'custom_gradient@eager_tape'"
        )
    return mechanism_name, context_name


def is_native(variant: str) -> bool:
    """Whether `variant` is native (see NATIVE_VARIANTS), opt-in variants included; no TensorFlow needed."""
    return is_native_pair(*_split(variant))


def select(variants: str | list[str] | tuple[str, ...] | None) -> tuple[str, ...]:
    """Validated variant names, in registry order; None means the default ones (`VARIANTS`). Accepts `mech@*`
    and `*@ctx` globs; `mech@*` and `*@*` match the default contexts, an opt-in context only when named."""
    if variants is None:
        return VARIANTS
    if isinstance(variants, str):
        variants = [variants]
    chosen: set[str] = set()
    for pattern in variants:
        mechanism_name, _, context_name = pattern.partition("@")
        if mechanism_name == "*" or context_name == "*":
            pool = VARIANTS if context_name == "*" else ALL_VARIANTS
            matches = {v for v in pool
                       if mechanism_name in ("*", v.split("@")[0]) and context_name in ("*", v.split("@")[1])}
            if not matches:
                _split(pattern.replace("*", "?"))  # raises with the valid names
            chosen |= matches
        else:
            _split(pattern)
            chosen.add(pattern)
    return tuple(v for v in ALL_VARIANTS if v in chosen)
