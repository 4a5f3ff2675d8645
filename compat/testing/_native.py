"""`assert_native_variants_agree`: the whole check matrix must agree in every native variant."""

from __future__ import annotations

from collections.abc import Sequence

from compat.checker import DEFAULT_REFERENCE, CheckReport, check
from compat.spec import GradientSpec
from compat.variants import NATIVE_VARIANTS


def assert_native_variants_agree(spec: GradientSpec | Sequence[GradientSpec], scenarios: Sequence[str] | None = None,
                                 dtypes: Sequence[str] | None = None, variants: Sequence[str] | None = None,
                                 reference: str = DEFAULT_REFERENCE) -> CheckReport:
    """Run the check matrix and fail, listing every unexpected difference, unless native variants agree.

    Use it in pytest and run the suite across TensorFlow releases with the project's noxfile
    (`nox -s tests -- -k my_spec`):

        def test_my_op_migrates_cleanly():
            compat.testing.assert_native_variants_agree(MY_SPEC, scenarios=["weighted", "gather"])

    Cross variants (a legacy mechanism in a TF2 context) never fail it; they are in the returned report.
    Error cells in native variants (your forward or gradient failed) fail it too.
    """
    __tracebackhide__ = True
    specs = [spec] if isinstance(spec, GradientSpec) else list(spec)
    report = check(specs, scenarios=scenarios, dtypes=dtypes,
                   variants=list(variants) if variants is not None else list(NATIVE_VARIANTS), reference=reference)
    problems = [cell for cell in report.cells if cell.unexpected or (cell.native and cell.status == "error")]
    if problems:
        lines = [f"{len(problems)} native cell(s) disagree with {reference} (TensorFlow {report.tensorflow}):"]
        for cell in problems:
            lines.append(f"  {cell.spec} / {cell.scenario} / {cell.dtype} / {cell.variant}: {cell.status}")
            lines += [f"      {d.kind}: {d.where}: {d.detail}" for d in cell.differences]
            if cell.result.message:
                lines.append(f"      {cell.result.message}")
        raise AssertionError("\n".join(lines))
    return report
