"""`assert_gradient_matches_forward`: a custom gradient checked against the forward it belongs to (like gradcheck)."""

from __future__ import annotations

from collections.abc import Sequence

from compat.checker import Cell, CheckReport, check
from compat.comparison import DEFAULT_REFERENCE
from compat.references import select_references
from compat.references.base import FD_TOLERANCES, ForwardCheck
from compat.spec import GradientSpec
from compat.testing._selection import Selection, resolve_variants

_SKIPPED_CELLS = ("unsupported", "not_observable")
"""Cell statuses that pass: TensorFlow refuses the combination, or gradcompat cannot see it (as the other
assertions let them pass)."""


def assert_gradient_matches_forward(spec: GradientSpec | Sequence[GradientSpec],
                                    scenarios: Sequence[str] | None = None, *, variants: Selection = "native",
                                    references: str | Sequence[str] = "finite_difference",
                                    dtypes: Sequence[str] | None = None,
                                    allow_not_differentiable: bool = False) -> CheckReport:
    """Fail unless each variant's input gradients are the derivative of the spec's own forward.

    What `torch.autograd.gradcheck` and JAX's `check_grads` do for a custom gradient: with the default
    `finite_difference`, the forward is differenced in float64 along 3 seeded random directions u and the
    directional derivative v.Ju (v: the upstream the scenario hands the op) is compared with g.u, g being the
    input gradients TensorFlow computed with your gradient function, within a tolerance by dtype
    (`compat.references.base.FD_TOLERANCES`); `autodiff` compares g with TensorFlow's own gradient of the forward
    instead. A numerically stable rewrite of a gradient passes; a straight-through estimator does not (its forward
    is piecewise constant: `not_differentiable`, which fails unless `allow_not_differentiable=True`).

        compat.testing.assert_gradient_matches_forward(MY_SPEC, scenarios=["sum", "weighted"])

    Args:
      spec: one spec or several.
      scenarios: downstream scenarios (`compat.SCENARIOS`); default all (`second_order` is not applicable to
        finite differences and passes).
      variants: `"native"` (default), `"cross"`, `"all"`, globs or a list of them.
      references: `"finite_difference"`, `"autodiff"` or both.
      dtypes: dtype names; default float32.
      allow_not_differentiable: let cells pass where the forward has no derivative to compare with (piecewise
        constant, a jump, no gradient registered, an integer op).

    Returns:
      The `CheckReport` (every cell's `forward` holds the comparisons), for further assertions.
    """
    __tracebackhide__ = True
    specs = [spec] if isinstance(spec, GradientSpec) else list(spec)
    chosen = resolve_variants(variants)
    names = select_references([references] if isinstance(references, str) else list(references))
    if not names:
        raise ValueError("assert_gradient_matches_forward() needs a reference: 'finite_difference' or 'autodiff'")
    reference = DEFAULT_REFERENCE if DEFAULT_REFERENCE in chosen else chosen[0]
    report = check(specs, scenarios=scenarios, dtypes=dtypes, variants=list(chosen), reference=reference,
                   references=names)
    failures = [(cell, checked) for cell in report.cells for checked in cell.forward
                if _fails(cell, checked, allow_not_differentiable)]
    if failures:
        raise AssertionError(_message(report, failures, allow_not_differentiable))
    return report


def _fails(cell: Cell, checked: ForwardCheck, allow_not_differentiable: bool) -> bool:
    if checked.status == "not_compared":
        return cell.result.status == "error"
    if checked.status == "not_differentiable":
        return not allow_not_differentiable
    return checked.status in ("differs", "error")


def _message(report: CheckReport, failures: Sequence[tuple[Cell, ForwardCheck]], allowed: bool) -> str:
    """One block per spec, scenario, dtype, reference and detail, naming the variants that fail alike."""
    groups: dict[tuple[str, str, str, str, str, str], list[str]] = {}
    for cell, checked in failures:
        detail = cell.result.message if checked.status == "not_compared" else checked.detail
        key = (cell.spec, cell.scenario, cell.dtype, checked.reference, checked.status, detail)
        groups.setdefault(key, []).append(cell.variant)
    lines = [f"{len(failures)} cell(s) compute a gradient that is not the derivative of the forward "
             f"(TensorFlow {report.tensorflow}):"]
    hint = False
    for (spec, scenario, dtype, reference, status, detail), variants in groups.items():
        shown = ", ".join(variants[:6]) + (f" and {len(variants) - 6} more" if len(variants) > 6 else "")
        what = "the cell failed" if status == "not_compared" else f"{reference} {status.replace('_', ' ')}"
        lines += ["", f"spec `{spec}`, scenario `{scenario}`, dtype {dtype}, variant{'s' * (len(variants) > 1)} "
                      f"{shown}: {what}", f"  {detail}"]
        hint = hint or status == "not_differentiable"
    if hint and not allowed:
        lines += ["", "not differentiable: the forward has no derivative to compare with there (a straight-through "
                      "estimator's is 0 almost everywhere, by design); pass allow_not_differentiable=True to let "
                      "those cells pass, or check the gradient's values another way."]
    if any(checked.reference == "finite_difference" for _, checked in failures):
        tolerances = ", ".join(f"{d} rtol={t.rtol:g} atol={t.atol:g}" for d, t in FD_TOLERANCES.items()
                               if d in report.dtypes)
        lines += ["", f"finite_difference tolerances: |g.u - v.Ju| <= atol + rtol * (sum |g| |u| + |v.Ju|), "
                      f"{tolerances}"]
    return "\n".join(lines)
