"""The check matrix: specs × dtypes × scenarios × variants, each cell compared with a reference variant."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

import tensorflow as tf

from compat.checker import DEFAULT_REFERENCE, CellStatus, Difference, cell_status, compare
from compat.distribute.compare import compare_distributed, references
from compat.dtypes import DTYPES, TOLERANCES, cast_spec
from compat.probe import UserCodeError, describe_exception, user_exception
from compat.results import VariantResult
from compat.runner import run_matrix
from compat.scenarios import Scenario, select_scenarios
from compat.signature import output_signature
from compat.spec import GradientSpec
from compat.variants import NATIVE_VARIANTS, is_native, parse_variant, select


@dataclasses.dataclass(frozen=True)
class Cell:
    """One spec, scenario, dtype and variant, with its verdict against the reference variant."""

    spec: str
    scenario: str
    dtype: str
    variant: str
    native: bool
    status: CellStatus
    differences: tuple[Difference, ...]
    result: VariantResult
    reference: str
    unexpected: bool
    """A native variant that fails, or disagrees with the reference in a way that can change what is learned."""

    @property
    def mechanism(self) -> str:
        return self.result.mechanism

    @property
    def context(self) -> str:
        return self.result.context


@dataclasses.dataclass(frozen=True)
class Skip:
    spec: str
    scenario: str
    reason: str


@dataclasses.dataclass(frozen=True)
class CheckReport:
    cells: tuple[Cell, ...]
    skipped: tuple[Skip, ...]
    reference: str
    specs: tuple[str, ...]
    scenarios: tuple[str, ...]
    dtypes: tuple[str, ...]
    variants: tuple[str, ...]
    tensorflow: str = dataclasses.field(default_factory=lambda: tf.__version__)
    tolerances: dict[str, dict[str, float]] = dataclasses.field(
        default_factory=lambda: {name: dataclasses.asdict(t) for name, t in TOLERANCES.items()})
    descriptions: dict[str, str] = dataclasses.field(default_factory=dict)
    """Spec name -> the spec's `description` (empty or absent when it has none)."""
    scenario_descriptions: dict[str, str] = dataclasses.field(default_factory=dict)
    """Scenario name -> what its downstream does."""

    @property
    def unexpected(self) -> tuple[Cell, ...]:
        return tuple(cell for cell in self.cells if cell.unexpected)

    @property
    def exit_code(self) -> int:
        """0 when every native variant agrees with the reference, 1 otherwise."""
        return 1 if self.unexpected else 0


Progress = Callable[[int, int, str], None]


def check(specs: Sequence[GradientSpec], scenarios: Sequence[str | Scenario] | None = None,
          dtypes: Sequence[str] | None = None, variants: Sequence[str] | None = None,
          reference: str = DEFAULT_REFERENCE, progress: Progress | None = None) -> CheckReport:
    """Run every spec in every dtype, scenario and variant, and compare each cell with `reference`.

    One graph or trace is built per (spec, dtype, context) for all its scenarios and variants. `scenarios`
    holds registered names or `Scenario` objects (e.g. one made from a user's loss).
    """
    chosen_scenarios = select_scenarios(list(scenarios) if scenarios is not None else None)
    chosen_dtypes = tuple(dtypes) if dtypes is not None else ("float32",)
    for dtype in chosen_dtypes:
        if dtype not in DTYPES:
            raise ValueError(f"unknown dtype {dtype!r}; choose from {list(DTYPES)}")
    parse_variant(reference)
    chosen_variants = select(list(variants) if variants is not None else None)
    to_run = select([*chosen_variants, reference])
    cells: list[Cell] = []
    skipped: list[Skip] = []
    total = len(specs) * len(chosen_dtypes)
    for step, (spec, dtype) in enumerate((s, d) for s in specs for d in chosen_dtypes):
        if progress:
            progress(step, total, f"{spec.name} {dtype}")
        try:
            spec_cells, spec_skips = _check_one(spec, dtype, chosen_scenarios, chosen_variants, to_run, reference)
        except UserCodeError as exc:
            spec_cells, spec_skips = _broken_spec_cells(spec.name, dtype, chosen_variants, reference, exc.problem), []
        except BaseException as exc:
            if not user_exception(exc):
                raise
            # Whatever else escapes (user code TensorFlow called back into, a gradcompat bug) sinks this
            # spec alone, named, and the others still run.
            problem = f"the check failed: {describe_exception(exc)}"
            spec_cells, spec_skips = _broken_spec_cells(spec.name, dtype, chosen_variants, reference, problem), []
        cells += spec_cells
        skipped += spec_skips if dtype == chosen_dtypes[0] else []
    if progress:
        progress(total, total, "done")
    return CheckReport(tuple(cells), tuple(skipped), reference, tuple(s.name for s in specs),
                       tuple(s.name for s in chosen_scenarios), chosen_dtypes, chosen_variants,
                       descriptions={s.name: s.description for s in specs if s.description},
                       scenario_descriptions={s.name: s.description for s in chosen_scenarios})


def _check_one(spec: GradientSpec, dtype: str, scenarios: Sequence[Scenario], variants: Sequence[str],
               to_run: Sequence[str], reference: str) -> tuple[list[Cell], list[Skip]]:
    """One spec in one dtype: every applicable scenario in every variant, each compared with the baseline."""
    typed = cast_spec(spec, dtype)
    output_signature(typed)
    applicable, skipped = _applicable(typed, scenarios)
    if not applicable:
        return [], skipped
    downstreams = [scenario.downstream(typed) for scenario in applicable]
    results = run_matrix(typed, downstreams, to_run)
    by_key = {(r.variant, r.downstream): r for r in results}
    baselines = {s.name: _baseline(reference, {v: by_key[v, s.name] for v in to_run}) for s in applicable}
    distributed = [r for r in results if r.replicas]
    refs = references(typed, {d.name: d for d in downstreams}, distributed, baselines) if distributed else None
    cells = []
    for scenario in applicable:
        baseline = baselines[scenario.name]
        for variant in variants:
            result = by_key[variant, scenario.name]
            differences = compare(result, by_key[baseline, scenario.name]) if variant != baseline else ()
            if refs is not None and result.replicas:
                differences = compare_distributed(result, by_key[baseline, scenario.name], refs)
            if variant == baseline:  # compared with nothing, but its own contract still counts
                differences = tuple(d for d in compare(result, result) if d.kind == "contract")
            native = is_native(variant)
            status = cell_status(result, differences)
            # A native error is always a failure, even where every variant fails alike (then none differs);
            # so is a native gradient TensorFlow silently accepted although it breaks the contract.
            unexpected = native and (status == "error" or any(d.kind == "contract" for d in differences) or (
                variant not in (baseline, reference) and any(d.breaking for d in differences)))
            cells.append(Cell(spec.name, scenario.name, dtype, variant, native, status,
                              differences, result, baseline, unexpected))
    return cells, skipped


def _baseline(reference: str, results: dict[str, VariantResult]) -> str:
    """The variant to compare with: the reference, or, where TensorFlow cannot run it (e.g. second order
    through a Defun grad_func) or it fails, the first native variant that ran."""
    if results[reference].status in ("ok", "not_called"):
        return reference
    fallback = [v for v in NATIVE_VARIANTS if v in results and results[v].status == "ok"]
    return fallback[0] if fallback else reference


def _broken_spec_cells(spec: str, dtype: str, variants: Sequence[str], reference: str, problem: str) -> list[Cell]:
    """A spec whose forward cannot even be built: one `error` cell per variant, saying why."""
    cells = []
    for variant in variants:
        mechanism, context = variant.split("@")
        message = f"spec `{spec}`, variant `{variant}`: {problem}"
        result = VariantResult(spec=spec, variant=variant, mechanism=mechanism, context=context, status="error",
                               message=message, downstream="sum")
        difference = Difference("error", "status", message)
        cells.append(Cell(spec, "sum", dtype, variant, is_native(variant), "error", (difference,), result,
                          reference, is_native(variant)))
    return cells


def _applicable(spec: GradientSpec, scenarios: Sequence[Scenario]) -> tuple[list[Scenario], list[Skip]]:
    applicable, skipped = [], []
    for scenario in scenarios:
        reason = scenario.skip_reason(spec)
        if reason is None:
            applicable.append(scenario)
        else:
            skipped.append(Skip(spec.name, scenario.name, reason))
    return applicable, skipped
