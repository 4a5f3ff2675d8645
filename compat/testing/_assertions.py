"""`assert_same_upstream` and `assert_same_gradients`: one spec checked in many variants against a reference."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal

from compat.checker import Cell, CheckReport, check
from compat.comparison import DEFAULT_REFERENCE, REPRESENTATION_KINDS, STATUS, Aspect, Difference
from compat.downstream import Downstream
from compat.results import VariantResult
from compat.runner import run
from compat.spec import GradientSpec
from compat.testing._expected import Expected, Ledger, parse_expected
from compat.testing._messages import Failure, failure_message
from compat.testing._selection import Selection, resolve_variants

Compared = Literal["upstream", "gradients"]


def assert_same_upstream(spec: GradientSpec | Sequence[GradientSpec], scenarios: Sequence[str] | None = None, *,
                         variants: Selection = "native", reference: str = DEFAULT_REFERENCE,
                         dtypes: Sequence[str] | None = None, expected: Expected | None = None,
                         strict: bool = False) -> CheckReport:
    """Fail unless each variant hands your gradient function the upstream gradients `reference` hands it.

    Compares every call's upstreams (values, dtype, shape, count, number of calls) and the cell's status
    (`not_called`, `error`...). Representation-only differences (`none_vs_zeros`, `sparse_vs_dense`,
    `static_shape`) and `unsupported` cells (TensorFlow refuses that combination) pass unless `strict=True`.

        compat.testing.assert_same_upstream(MY_SPEC, scenarios=["sum", "gather"], variants="*@eager_tape",
                                            expected={"override_map@eager_tape": "not_called"})

    Args:
      spec: one spec or several.
      scenarios: downstream scenarios (`compat.SCENARIOS`); default all.
      variants: `"native"`, `"cross"`, `"all"`, globs (`"*@v1_session"`) or a list of them.
      reference: the variant every other one is compared with.
      dtypes: dtype names; default float32.
      expected: known pitfalls, variant glob -> difference kind (or a list of kinds). They pass while
        TensorFlow still shows them and fail once it no longer does, so a new release that changes them is
        noticed; an expected status (`not_called`, `unsupported`, `error`) covers the whole cell. Each
        (glob, kind) must show in at least one cell of this call; globs for variants not run are ignored,
        so one dict can serve a whole suite.
      strict: fail on representation-only differences and `unsupported` cells too.

    Returns:
      The `CheckReport`, for further assertions.
    """
    __tracebackhide__ = True
    return _assert_same("upstream", spec, scenarios, variants, reference, dtypes, expected, strict)


def assert_same_gradients(spec: GradientSpec | Sequence[GradientSpec], scenarios: Sequence[str] | None = None, *,
                          variants: Selection = "native", reference: str = DEFAULT_REFERENCE,
                          dtypes: Sequence[str] | None = None, expected: Expected | None = None,
                          strict: bool = False) -> CheckReport:
    """Fail unless each variant computes the input gradients `reference` computes (what the model learns from).

    Compares the input gradients, the gradient function's contract (shape and dtype of what it returns) and
    the cell's status. Representation-only differences (`none_vs_zeros`, `sparse_vs_dense`) and
    `unsupported` cells pass unless `strict=True`. Arguments as for `assert_same_upstream`.
    """
    __tracebackhide__ = True
    return _assert_same("gradients", spec, scenarios, variants, reference, dtypes, expected, strict)


def run_variant(spec: GradientSpec, variant: str,
                loss: Downstream | Callable[..., Any] | None = None) -> VariantResult:
    """`spec` run in one variant (the `variant` a parametrised test receives): what the function received."""
    if not isinstance(variant, str) or any(c in variant for c in "*?[,"):
        raise ValueError(f"run_variant() runs one variant, got {variant!r}; use compat.run(spec, loss, variants) "
                         f"for several")
    return run(spec, loss, [variant])[0]


def _assert_same(compared: Compared, spec: GradientSpec | Sequence[GradientSpec], scenarios: Sequence[str] | None,
                 variants: Selection, reference: str, dtypes: Sequence[str] | None, expected: Expected | None,
                 strict: bool) -> CheckReport:
    __tracebackhide__ = True
    specs = [spec] if isinstance(spec, GradientSpec) else list(spec)
    chosen = resolve_variants(variants)
    to_run = list(chosen) + ([reference] if reference not in chosen else [])
    report = check(specs, scenarios=scenarios, dtypes=dtypes, variants=to_run, reference=reference)
    ledger = Ledger(parse_expected(expected, chosen))
    failures = []
    for cell in report.cells:
        if cell.variant not in chosen:
            continue
        status = cell.result.status
        if status in ("unsupported", "not_observable") and not strict and not ledger.covers(cell.variant, status):
            continue
        relevant = _relevant(compared, cell)
        remaining = ledger.accept(cell.variant, cell.result.status, relevant)
        if not strict:
            remaining = [d for d in remaining if d.kind not in REPRESENTATION_KINDS]
        if remaining:
            failures.append(Failure(cell, tuple(remaining)))
    unmet = ledger.unmet()
    if failures or unmet:
        raise AssertionError(failure_message(compared, report, failures, unmet, ledger, chosen))
    return report


_UPSTREAM_ASPECTS: frozenset[Aspect] = frozenset({"status", "upstream", "upstreams", "calls"})
_GRADIENT_ASPECTS: frozenset[Aspect] = frozenset({"status", "input_grad", "input_grads", "gradient"})
"""What `assert_same_upstream` and `assert_same_gradients` compare: a single-device cell's, not a replica's."""


def _relevant(compared: Compared, cell: Cell) -> list[Difference]:
    """The cell's differences that concern `compared`, with an error even where the reference failed alike."""
    aspects = _UPSTREAM_ASPECTS if compared == "upstream" else _GRADIENT_ASPECTS
    relevant = [d for d in cell.differences if d.location.part is None and d.location.aspect in aspects]
    if cell.result.status == "error" and not any(d.kind == "error" for d in relevant):
        relevant.insert(0, Difference("error", STATUS, cell.result.message or "the variant failed"))
    return relevant
