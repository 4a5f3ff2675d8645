"""Variants: every `mechanism@context` pair, and which of them are native (used as documented)."""

from __future__ import annotations

from compat.contexts import ALL_CONTEXTS, CONTEXTS, Context
from compat.mechanisms import MECHANISMS, Mechanism

ALL_VARIANTS: tuple[str, ...] = tuple(f"{m}@{c}" for m in MECHANISMS for c in ALL_CONTEXTS)
"""Every variant name, mechanism-major, in registry order, opt-in contexts included."""

VARIANTS: tuple[str, ...] = tuple(f"{m}@{c}" for m in MECHANISMS for c in CONTEXTS)
"""The default variants: every mechanism in every context but the opt-in ones (`OPT_IN_VARIANTS`)."""

OPT_IN_VARIANTS: tuple[str, ...] = tuple(v for v in ALL_VARIANTS if v not in VARIANTS)
"""Variants of the opt-in contexts (tf.distribute, Jacobians, forward mode): chosen only by name or `*@context`."""

NATIVE_VARIANTS: tuple[str, ...] = tuple(
    f"{m}@{c}" for m, mechanism in MECHANISMS.items() for c, context in CONTEXTS.items()
    if context.native and mechanism.is_native(c)
)
"""Variants where the mechanism is used the way it is documented to work, in a context meant to keep the
numbers (not mixed precision); the others are *cross*."""


def variant_names() -> tuple[str, ...]:
    return VARIANTS


def parse_variant(variant: str) -> tuple[Mechanism, Context]:
    """The mechanism and context of `mechanism@context`; a ValueError lists the valid names otherwise."""
    mechanism_name, at, context_name = variant.partition("@")
    if not at or mechanism_name not in MECHANISMS or context_name not in ALL_CONTEXTS:
        raise ValueError(
            f"unknown variant {variant!r}: a variant is MECHANISM@CONTEXT with MECHANISM one of "
            f"{sorted(MECHANISMS)} and CONTEXT one of {sorted(ALL_CONTEXTS)}, e.g. 'custom_gradient@eager_tape'"
        )
    return MECHANISMS[mechanism_name], ALL_CONTEXTS[context_name]


def is_native(variant: str) -> bool:
    mechanism, context = parse_variant(variant)
    return context.native and mechanism.is_native(context.name)


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
                parse_variant(pattern.replace("*", "?"))  # raises with the valid names
            chosen |= matches
        else:
            parse_variant(pattern)
            chosen.add(pattern)
    return tuple(v for v in ALL_VARIANTS if v in chosen)
