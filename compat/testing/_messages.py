"""Failure messages for the testing assertions: cells that fail alike grouped, values shown side by side."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from compat.checker import Cell, CheckReport
from compat.comparison import Difference, Location
from compat.results import VariantResult
from compat.testing._expected import STATUS_KINDS, Expectation, Ledger

_WHAT = {"upstream": "the upstream gradients handed to the gradient function",
         "gradients": "the input gradients TensorFlow computed"}


@dataclasses.dataclass(frozen=True)
class Failure:
    """A cell and the differences no expectation or tolerance let pass."""

    cell: Cell
    differences: tuple[Difference, ...]


def failure_message(compared: str, report: CheckReport, failures: Sequence[Failure], unmet: Sequence[Expectation],
                    ledger: Ledger, chosen: Sequence[str]) -> str:
    """The whole message: one block per way of failing, then any expected pitfall that no longer happens."""
    cells = {(c.spec, c.scenario, c.dtype, c.variant): c for c in report.cells}
    lines: list[str] = []
    if failures:
        lines.append(f"{len(failures)} cell(s) differ from the reference in {_WHAT[compared]} "
                     f"(TensorFlow {report.tensorflow}):")
        for (spec, scenario, dtype, kind, where, _), group in _groups(failures).items():
            first = group[0]
            variants = [f.cell.variant for f in group]
            lines.append("")
            lines.append(f"spec `{spec}`, scenario `{scenario}`, dtype {dtype}, variant{'s' * (len(variants) > 1)} "
                         f"{', '.join(variants)}: {kind} at {where} (reference {first.cell.reference})")
            difference = next(d for d in first.differences if (d.kind, d.where) == (kind, where))
            if kind not in STATUS_KINDS:  # a status detail repeats the variant's message, shown below
                lines.append(f"  {difference.detail}")
            reference = cells.get((spec, scenario, dtype, first.cell.reference))
            lines += _values(difference.location, first.cell.result, reference.result if reference else None)
        lines += _odd_one_out(report, failures, chosen)
    if unmet:
        lines += [""] if lines else []
        lines.append(f"TensorFlow {report.tensorflow} no longer shows {len(unmet)} expected pitfall(s): its "
                     f"behaviour changed; update or remove them in `expected=`:")
        for expectation in unmet:
            now = sorted(set(ledger.found.get(expectation, [])))
            shown = "; ".join(now[:4]) + (f"; and {len(now) - 4} more" if len(now) > 4 else "")
            lines.append(f"  expected {{{expectation.pattern!r}: {expectation.kind!r}}}, but the cells show: "
                         f"{shown or 'nothing'}")
    return "\n".join(lines)


def _groups(failures: Sequence[Failure]) -> dict[tuple[str, ...], list[Failure]]:
    groups: dict[tuple[str, ...], list[Failure]] = {}
    for failure in failures:
        cell = failure.cell
        for d in failure.differences:
            # A status message names its variant; other details are equal only where the cells fail alike.
            detail = "" if d.kind in STATUS_KINDS else d.detail
            groups.setdefault((cell.spec, cell.scenario, cell.dtype, d.kind, d.where, detail), []).append(failure)
    return groups


def _values(where: Location, mine: VariantResult, reference: VariantResult | None) -> list[str]:
    """What each side had at `where`, one line each, like np.testing.assert_allclose's x and y."""
    lines = []
    for label, result in ((mine.variant, mine), (f"{reference.variant} (reference)" if reference else "", reference)):
        text = _value_at(where, result) if result is not None else None
        if text is not None:
            prefix = f"  {label}: "
            lines.append(prefix + text.replace("\n", "\n" + " " * len(prefix)))
    return lines


def _value_at(where: Location, result: VariantResult) -> str | None:
    index = where.position
    if where.part is not None:
        return None
    if where.aspect == "status":
        return f"{result.status}" + (f" ({result.message})" if result.message and result.status != "ok" else "")
    if where.aspect == "calls":
        return f"{result.calls} call(s)"
    if where.aspect == "input_grad" and isinstance(index, int) and index < len(result.input_grads):
        grad = result.input_grads[index]
        return "None" if grad is None else np.array2string(grad, threshold=16, precision=6)
    if where.aspect == "upstream" and isinstance(index, int) and where.call < len(result.upstreams):
        call = result.upstreams[where.call]
        return str(call[index]) if index < len(call) else None
    return None


def _odd_one_out(report: CheckReport, failures: Sequence[Failure], chosen: Sequence[str]) -> list[str]:
    """A note for each scenario where every other variant fails the same way: the reference is the odd one."""
    signatures: dict[tuple[str, str, str], dict[str, frozenset[tuple[str, str]]]] = {}
    for failure in failures:
        cell = failure.cell
        key = (cell.spec, cell.scenario, cell.dtype)
        signatures.setdefault(key, {})[cell.variant] = frozenset((d.kind, d.where) for d in failure.differences)
    lines = []
    for cell in report.cells:
        if cell.variant != cell.reference:
            continue
        key = (cell.spec, cell.scenario, cell.dtype)
        others = [c.variant for c in report.cells if (c.spec, c.scenario, c.dtype) == key and c.variant in chosen
                  and c.variant != cell.reference and c.result.status != "unsupported"]
        seen = signatures.get(key, {})
        if len(others) >= 2 and all(v in seen for v in others) and len({seen[v] for v in others}) == 1:
            suggestion = others[0]
            lines.append("")
            lines.append(f"note: in spec `{key[0]}`, scenario `{key[1]}`, dtype {key[2]}, every other variant differs "
                         f"from the reference {cell.reference} the same way: the reference is the odd one out. "
                         f"Compare with another (reference={suggestion!r}) or declare it in `expected=`.")
    return lines
