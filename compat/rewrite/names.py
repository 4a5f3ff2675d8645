"""Local names for generated code: fresh within one function, never shadowing what a moved body reads."""

from __future__ import annotations

import keyword

import libcst as cst


def names_in(node: cst.CSTNode) -> set[str]:
    """Every identifier written in `node` (read or bound, attribute names excluded)."""
    found: set[str] = set()

    class _Names(cst.CSTVisitor):
        def visit_Name(self, name: cst.Name) -> None:
            found.add(name.value)

        def visit_Attribute(self, attribute: cst.Attribute) -> bool:
            attribute.value.visit(self)
            return False

    node.visit(_Names())
    return found


def local_fresh(base: str, avoid: set[str] | frozenset[str]) -> str:
    """`base`, else `base_`, `base__`...: not in `avoid` and not a keyword."""
    candidate = base
    while candidate in avoid or keyword.iskeyword(candidate):
        candidate += "_"
    return candidate


def local_names(bases: tuple[str, ...], avoid: set[str] | frozenset[str]) -> tuple[str, ...]:
    """A fresh local name for each of `bases` (`local_fresh`), none in `avoid` nor equal to another."""
    taken = set(avoid)
    names = []
    for base in bases:
        names.append(local_fresh(base, taken))
        taken.add(names[-1])
    return tuple(names)
