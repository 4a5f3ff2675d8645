"""Expected pitfalls: differences a user declares per variant glob, which pass while TensorFlow still shows them."""

from __future__ import annotations

import dataclasses
import fnmatch
import typing
from collections.abc import Mapping, Sequence

from compat.comparison import Difference, DifferenceKind

STATUS_KINDS = frozenset({"not_called", "unsupported", "error", "not_observable"})
"""Expected kinds that name what happened to the whole cell: every difference in such a cell follows from it."""

KINDS: tuple[str, ...] = typing.get_args(DifferenceKind)

Expected = Mapping[str, str | Sequence[str]]


@dataclasses.dataclass(frozen=True)
class Expectation:
    """One declared pitfall: in the variants `pattern` matches, difference `kind` is expected."""

    pattern: str
    kind: str

    def matches(self, variant: str) -> bool:
        return fnmatch.fnmatchcase(variant, self.pattern)


def parse_expected(expected: Expected | None, variants: Sequence[str]) -> tuple[Expectation, ...]:
    """The expectations that concern `variants` (the ones run); ValueError names a bad glob or kind.

    A glob that matches a variant, just not one run here, is left out: one dict of pitfalls can serve
    every test of a suite, each test running some of the variants.
    """
    from compat.variants import VARIANTS

    expectations = []
    for pattern, kinds in (expected or {}).items():
        if not fnmatch.filter(VARIANTS, pattern):
            raise ValueError(f"expected={{{pattern!r}: ...}} matches no variant; use a name or glob over "
                             f"{list(VARIANTS)}")
        for kind in [kinds] if isinstance(kinds, str) else list(kinds):
            if kind not in KINDS:
                raise ValueError(f"expected={{{pattern!r}: {kind!r}}}: {kind!r} is not a difference kind; "
                                 f"use one of {list(KINDS)}")
            if fnmatch.filter(variants, pattern):
                expectations.append(Expectation(pattern, kind))
    return tuple(expectations)


@dataclasses.dataclass
class Ledger:
    """Accepts the expected differences cell by cell and remembers which expectations were seen at all."""

    expectations: tuple[Expectation, ...]
    seen: set[Expectation] = dataclasses.field(default_factory=set)
    found: dict[Expectation, list[str]] = dataclasses.field(default_factory=dict)

    def accept(self, variant: str, status: str, differences: Sequence[Difference]) -> list[Difference]:
        """The differences no expectation covers; an expected status (`not_called`...) covers the whole cell."""
        mine = [e for e in self.expectations if e.matches(variant)]
        observed = {d.kind for d in differences} | {status}
        for expectation in mine:
            if expectation.kind in observed:
                self.seen.add(expectation)
            else:
                shown = ", ".join(sorted({f"{d.kind} at {d.where}" for d in differences})) or f"{status}, no difference"
                self.found.setdefault(expectation, []).append(f"{variant}: {shown}")
        kinds = {e.kind for e in mine}
        if status in kinds & STATUS_KINDS:
            return []
        return [d for d in differences if d.kind not in kinds]

    def covers(self, variant: str, kind: str) -> bool:
        """Whether an expectation names `kind` for `variant`."""
        return any(e.kind == kind and e.matches(variant) for e in self.expectations)

    def unmet(self) -> list[Expectation]:
        """Expectations no matching cell showed: TensorFlow's behaviour changed since they were written."""
        return [e for e in self.expectations if e not in self.seen]
