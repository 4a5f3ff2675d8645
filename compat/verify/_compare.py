"""Compare the rewritten side with the original, cell by cell, with the checker's tolerances and kinds."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from compat.checker import Difference, DifferenceKind, _compare_arrays, _compare_upstream
from compat.verify._report import VerifyCell
from compat.verify._results import FORWARD, ORIGINAL_CONTEXT, Calls, SideResult


def compare_sides(original: SideResult, rewritten: SideResult, entries: Sequence[str],
                  contexts: Sequence[str]) -> tuple[VerifyCell, ...]:
    """One cell per entry × ("forward", *scenarios) × context, the original in a v1 Session as reference."""
    scenarios = original.scenarios or rewritten.scenarios
    cells = []
    for entry in entries:
        for scenario in (FORWARD, *scenarios):
            for context in contexts:
                cells.append(_cell(original, rewritten, entry, scenario, context))
    return tuple(cells)


def _side_problem(side: SideResult, entry: str, name: str) -> str:
    if side.error:
        return f"the {name} side failed: {side.error}"
    if entry in side.entry_errors:
        return f"the {name} entry failed: {side.entry_errors[entry]}"
    return ""


def _cell(original: SideResult, rewritten: SideResult, entry: str, scenario: str, context: str) -> VerifyCell:
    def cell(status: str, message: str = "", differences: tuple[Difference, ...] = (),
             upstream: tuple[str, tuple[Difference, ...]] = ("not observable", ())) -> VerifyCell:
        return VerifyCell(entry, scenario, context, status, differences, message,  # type: ignore[arg-type]
                          upstream[0], upstream[1])

    problems = [_side_problem(original, entry, "original"), _side_problem(rewritten, entry, "rewritten")]
    if any(problems):
        return cell("error", "; ".join(filter(None, problems)))
    reference = original.attempts.get((entry, ORIGINAL_CONTEXT, scenario))
    mine = rewritten.attempts.get((entry, context, scenario))
    if reference is None or mine is None:
        missing = "original" if reference is None else "rewritten"
        return cell("error", f"the {missing} side reported no result for this cell")
    if reference.status == "skipped":
        return cell("skipped", reference.message)
    if reference.status == "error":
        ran = "runs" if mine.status == "ok" else "fails too"
        if scenario == FORWARD:
            return cell("error", f"the original fails in a v1 Session ({reference.message}); the rewrite {ran}")
        return cell("unsupported", f"the original cannot run this scenario in a v1 Session "
                                   f"({reference.message}); the rewrite {ran}")
    if mine.status != "ok":
        kind: DifferenceKind = "error" if mine.status == "error" else "unsupported"
        what = "skipped it" if mine.status == "skipped" else "failed"
        return cell("differs", f"the rewrite {what} where the original ran",
                    (Difference(kind, "status", mine.message),))
    where = "output" if scenario == FORWARD else "input_grad"
    differences = tuple(_compare_values(where, mine.values, reference.values))
    status = "differs" if any(d.breaking for d in differences) else "same"
    upstream = ("", ()) if scenario == FORWARD else compare_calls(mine.calls, reference.calls)
    return cell(status, "", differences, upstream)


def _compare_values(where: str, mine: Sequence[np.ndarray | None],
                    theirs: Sequence[np.ndarray | None]) -> list[Difference]:
    differences: list[Difference] = []
    if len(mine) != len(theirs):
        differences.append(Difference("shape", f"{where}s", f"{len(mine)} here, {len(theirs)} in the original"))
    for index, (a, b) in enumerate(zip(mine, theirs, strict=False)):
        differences += [_named(d) for d in _compare_arrays(f"{where}[{index}]", a, b)]
    return differences


def _named(difference: Difference) -> Difference:
    """The checker says "the reference"; here the reference is the original."""
    detail = difference.detail.replace("in the reference", "in the original")
    return Difference(difference.kind, difference.where, detail, difference.max_abs, difference.max_rel,
                      difference.index)


def compare_calls(mine: Calls | None, theirs: Calls | None) -> tuple[str, tuple[Difference, ...]]:
    """A summary of the upstreams both sides' gradient functions received, and their differences.

    Calls are matched as a multiset (a Session runs independent gradient functions in no fixed order).
    """
    if theirs is None:
        return "not observable: the original registers no gradient function that can be instrumented", ()
    if mine is None:
        return "not observable: the rewritten module defines no tf.custom_gradient", ()
    if not mine and not theirs:
        return "not called on either side", ()
    if not mine or not theirs:
        return (f"observed on one side only ({len(mine)} call(s) in the rewrite, {len(theirs)} recorded in the "
                f"original): its gradient function there cannot be instrumented or did not run"), ()
    if len(mine) != len(theirs):
        return "differs", (Difference("calls", "calls", f"{len(mine)} call(s) in the rewrite, {len(theirs)} in "
                                                       f"the original"),)
    unmatched = list(theirs)
    for call in mine:
        match = next((other for other in unmatched if not _call_differences(call, other)), None)
        if match is None:
            partner = unmatched[0]
            return "differs", tuple(_named(d) for d in _call_differences(call, partner))
        unmatched.remove(match)
    return f"same ({len(mine)} call(s))", ()


def _call_differences(mine: tuple, theirs: tuple) -> list[Difference]:
    if len(mine) != len(theirs):
        return [Difference("shape", "upstream", f"{len(mine)} upstream(s) here, {len(theirs)} in the original")]
    differences: list[Difference] = []
    for index, (a, b) in enumerate(zip(mine, theirs, strict=True)):
        differences += _compare_upstream(f"upstream[{index}]", a, b)
    return differences
