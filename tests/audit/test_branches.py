"""Exclusive arms: if/else, match cases, except/else; conditionals in loops are not exclusive."""

from __future__ import annotations

import ast

from compat.audit.branches import BranchMap, exclusive

SRC = """\
if a:
    p1 = 1
else:
    p2 = 1
match m:
    case 1:
        p3 = 1
    case _:
        p4 = 1
try:
    p5 = 1
except E:
    p6 = 1
except F:
    p7 = 1
else:
    p8 = 1
while w:
    if a:
        p9 = 1
    else:
        p10 = 1
"""


def _arms() -> dict[str, tuple]:
    tree = ast.parse(SRC)
    branches = BranchMap(tree)
    return {n.id: branches.at(n) for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id.startswith("p")}


def test_exclusive_arms():
    arms = _arms()
    assert exclusive(arms["p1"], arms["p2"])
    assert exclusive(arms["p3"], arms["p4"])
    assert exclusive(arms["p6"], arms["p7"]) and exclusive(arms["p6"], arms["p8"])


def test_places_that_can_both_run():
    arms = _arms()
    assert not exclusive(arms["p1"], arms["p3"])  # different statements
    assert not exclusive(arms["p5"], arms["p6"])  # a try body runs before its handler
    assert not exclusive(arms["p9"], arms["p10"])  # another iteration may take the other arm
    assert not exclusive(arms["p1"], arms["p1"])
