"""Compare the rewritten side with the original, cell by cell, with the checker's tolerances and kinds."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

import numpy as np

from compat.comparison import STATUS, Aspect, Difference, DifferenceKind, Location, compare_arrays, compare_upstream
from compat.verify._report import UpstreamStatus, VerifyCell
from compat.verify._results import FORWARD, ORIGINAL_CONTEXT, Attempt, Calls, SideResult

Upstreams = tuple[UpstreamStatus | None, str, tuple[Difference, ...]]
"""How a cell's upstreams compare: status (None for the forward row), summary, differences."""


def compare_sides(original: SideResult, rewritten: SideResult, entries: Sequence[str], contexts: Sequence[str],
                  requested: Sequence[str] | None = None) -> tuple[VerifyCell, ...]:
    """One cell per entry × ("forward", *scenarios) × context, the original in a v1 Session as reference; the
    forward row only when `requested` (the scenarios asked for; None: all) names it or is None."""
    scenarios = original.scenarios or rewritten.scenarios
    rows = (FORWARD, *scenarios) if requested is None or FORWARD in requested else scenarios
    cells = []
    for entry in entries:
        for scenario in rows:
            for context in contexts:
                cells.append(_cell(original, rewritten, entry, scenario, context))
    return tuple(cells)


def _side_problem(side: SideResult, entry: str, name: str) -> str:
    if side.error:
        return f"the {name} side failed: {side.error}"
    if entry in side.entry_errors:
        return f"the {name} entry failed: {side.entry_errors[entry]}"
    return ""


def _exception_type(message: str) -> str:
    """`ValueError` of "while running: ValueError: ..." (an attempt's message), for comparing two failures."""
    text = message.split(": ", 1)[1] if message.startswith(("while building: ", "while running: ")) else message
    return text.split(":", 1)[0].strip()


def _cell(original: SideResult, rewritten: SideResult, entry: str, scenario: str, context: str) -> VerifyCell:
    def cell(status: str, message: str = "", differences: tuple[Difference, ...] = (),
             upstream: Upstreams = ("not_observable", "not observable", ())) -> VerifyCell:
        upstream_status, summary, upstream_differences = upstream
        return VerifyCell(entry, scenario, context, status, differences, message,  # type: ignore[arg-type]
                          summary, upstream_differences, upstream_status)

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
        return _original_failed(cell, scenario, reference, mine)
    if mine.status != "ok":
        kind: DifferenceKind = "error" if mine.status == "error" else "unsupported"
        what = "skipped it" if mine.status == "skipped" else "failed"
        return cell("differs", f"the rewrite {what} where the original ran",
                    (Difference(kind, STATUS, mine.message),))
    if scenario == FORWARD:
        differences = tuple(_compare_values("output", "outputs", mine.values, reference.values))
    else:
        differences = tuple(_compare_gradients(mine, reference))
    status = "differs" if any(d.breaking for d in differences) else "same"
    random = status == "differs" and "random" in original.notes.get(entry, "")
    note = f"values differ, and the original's forward is random (see the note on `{entry}`)" if random else ""
    upstream: Upstreams = (None, "", ()) if scenario == FORWARD else compare_calls(mine.calls, reference.calls)
    return cell(status, note, differences, upstream)


def _original_failed(cell: Callable[..., VerifyCell], scenario: str, reference: Attempt,
                     mine: Attempt) -> VerifyCell:
    """A cell whose original failed: TensorFlow refusing the combination is `unsupported` (nothing to compare);
    any other failure is a behaviour the rewrite must keep: `differs` if the rewrite runs."""
    ran = "runs" if mine.status == "ok" else f"fails too ({mine.message})"
    if reference.died:
        return cell("error", f"the original could not be run here ({reference.message}); the rewrite {ran}")
    if reference.refused:
        return cell("unsupported", f"TensorFlow refuses this for the original in a v1 Session ({reference.message});"
                                   f" the rewrite {ran}")
    if scenario == FORWARD:
        return cell("error", f"the original fails in a v1 Session ({reference.message}); the rewrite {ran}: "
                             f"nothing to compare the rewrite with")
    if mine.status == "error" and not mine.died and _exception_type(mine.message) == _exception_type(reference.message):
        return cell("unsupported", f"both fail the same way: the original ({reference.message}); the rewrite "
                                   f"({mine.message})")
    what = "runs where the original fails" if mine.status == "ok" else f"fails differently ({mine.message})"
    return cell("differs", f"the original fails in a v1 Session ({reference.message}); the rewrite {what}",
                (Difference("error", STATUS, f"the original raises: {reference.message}"),))


def _compare_values(one: Aspect, counted: Aspect, mine: Sequence[np.ndarray | None],
                    theirs: Sequence[np.ndarray | None]) -> list[Difference]:
    differences: list[Difference] = []
    if len(mine) != len(theirs):
        differences.append(Difference("shape", Location(counted), f"{len(mine)} here, {len(theirs)} in the original"))
    for index, (a, b) in enumerate(zip(mine, theirs, strict=False)):
        differences += [_named(d) for d in compare_arrays(Location(one, index), a, b)]
    return differences


def _compare_gradients(mine: Attempt, theirs: Attempt) -> list[Difference]:
    """The inputs' gradients by position, then the variables' matched by name (`W:0`), else in order of shape."""
    inputs = len(mine.values) - len(mine.variable_names)
    differences = _compare_values("input_grad", "input_grads", mine.values[:inputs],
                                  theirs.values[:len(theirs.values) - len(theirs.variable_names)])
    for name, (a, b) in _matched_variables(mine, theirs).items():
        if a is None and b is None:
            continue
        if a is None or b is None:
            side = "the rewrite" if a is None else "the original"
            missing = f"{side} has no variable `{name}` (or it gets no gradient there)"
            differences.append(Difference("count", Location("variable_grad", name), missing))
            continue
        differences += [_named(d) for d in compare_arrays(Location("variable_grad", name), a, b)]
    return differences


def _variables(attempt: Attempt) -> list[tuple[str, np.ndarray | None]]:
    values = attempt.values[len(attempt.values) - len(attempt.variable_names):]
    return list(zip(attempt.variable_names, values, strict=True))


def _matched_variables(mine: Attempt, theirs: Attempt) -> dict[str, tuple[np.ndarray | None, np.ndarray | None]]:
    """Variable name -> (rewrite's gradient, original's); names that match exactly first, then the rest paired in
    order among variables of the same shape (a rename must not hide a gradient)."""
    left, right = _variables(mine), _variables(theirs)
    matched: dict[str, tuple[np.ndarray | None, np.ndarray | None]] = {}
    for same_name in (True, False):
        unmatched = []
        for name, value in right:
            index = next((i for i, (other, grad) in enumerate(left)
                          if (other == name if same_name else _shape(grad) == _shape(value))), None)
            if index is None:
                unmatched.append((name, value))
                continue
            other, grad = left.pop(index)
            matched[name if other == name else f"{other} ~ {name}"] = (grad, value)
        right = unmatched
    matched.update({name: (None, value) for name, value in right})
    matched.update({name: (value, None) for name, value in left})
    return matched


def _shape(value: np.ndarray | None) -> tuple[int, ...] | None:
    return None if value is None else tuple(value.shape)


def _named(difference: Difference) -> Difference:
    """The checker says "the reference"; here the reference is the original."""
    detail = difference.detail.replace("in the reference", "in the original")
    return dataclasses.replace(difference, detail=detail)


def compare_calls(mine: Calls | None, theirs: Calls | None) -> Upstreams:
    """How the upstreams both sides' gradient functions received compare (status, summary, differences).

    Calls are matched as a multiset (a Session runs independent gradient functions in no fixed order).
    """
    if theirs is None:
        return "not_observable", ("not observable: the original registers no gradient function that can be "
                                  "instrumented"), ()
    if mine is None:
        return "not_observable", "not observable: the rewritten module defines no tf.custom_gradient", ()
    if not mine and not theirs:
        return "not_called", "not called on either side", ()
    if not mine or not theirs:
        return "not_observable", (f"observed on one side only ({len(mine)} call(s) in the rewrite, {len(theirs)} "
                                  f"recorded in the original): its gradient function there cannot be instrumented "
                                  f"or did not run"), ()
    if len(mine) != len(theirs):
        return "differs", "differs", (Difference("calls", Location("calls"), f"{len(mine)} call(s) in the rewrite, "
                                                                             f"{len(theirs)} in the original"),)
    unmatched = list(theirs)
    for call in mine:
        match = next((other for other in unmatched if not _call_differences(call, other)), None)
        if match is None:
            partner = unmatched[0]
            return "differs", "differs", tuple(_named(d) for d in _call_differences(call, partner))
        unmatched.remove(match)
    return "same", f"same ({len(mine)} call(s))", ()


def _call_differences(mine: tuple, theirs: tuple) -> list[Difference]:
    if len(mine) != len(theirs):
        return [Difference("shape", Location("upstream"), f"{len(mine)} upstream(s) here, "
                                                          f"{len(theirs)} in the original")]
    differences: list[Difference] = []
    for index, (a, b) in enumerate(zip(mine, theirs, strict=True)):
        differences += compare_upstream(Location("upstream", index), a, b)
    return differences
