"""The check matrix: specs × dtypes × scenarios × variants, each cell compared with a reference variant."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import tensorflow as tf

from compat.comparison import DEFAULT_REFERENCE, STATUS, CellStatus, Difference, cell_status, compare
from compat.distribute.compare import References, compare_distributed
from compat.distribute.reference_runs import shard_references
from compat.dtypes import DTYPES, TOLERANCES, cast_spec
from compat.exceptions import describe_exception
from compat.probe import UserCodeError, user_exception
from compat.references import compute, select_references
from compat.references.base import ForwardCheck, ForwardValue, check_cell
from compat.registry import check_names
from compat.results import VariantResult
from compat.runner import run_matrix
from compat.scenarios import Scenario, select_scenarios
from compat.sharding import Shard, split, unit_label
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
    forward: tuple[ForwardCheck, ...] = ()
    """The cell's input gradients against each reference that is the forward itself (`autodiff`,
    `finite_difference`): what the custom gradient changes. Never part of `unexpected`."""

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
    units: tuple[UnitTime, ...] = ()
    """The (spec, dtype) units this run checked, in report order, with how long each took."""
    shard: Shard | None = None
    """The shard of the run this report holds (its `units` only), or None for a whole run."""
    run: Mapping[str, Any] | None = None
    """The flags that shaped the cells (compat-check's), which shards of one run must share."""
    references: tuple[str, ...] = ()
    """The references that are the forward itself computed for every scenario (`compat.references`)."""

    @property
    def forward_values(self) -> tuple[ForwardValue, ...]:
        """What each reference computed, once per (reference, spec, scenario, dtype), in cell order."""
        found: dict[tuple[str, str, str, str], ForwardValue] = {}
        for cell in self.cells:
            for checked in cell.forward:
                value = checked.value
                found.setdefault((value.reference, value.spec, value.scenario, value.dtype), value)
        return tuple(found.values())

    @property
    def unexpected(self) -> tuple[Cell, ...]:
        return tuple(cell for cell in self.cells if cell.unexpected)

    @property
    def exit_code(self) -> int:
        """0 when every native variant agrees with the reference, 1 otherwise."""
        return 1 if self.unexpected else 0


@dataclasses.dataclass(frozen=True)
class UnitTime:
    """One (spec, dtype) unit of a run and the seconds it took (a later run's `--durations` balances shards by it)."""

    spec: str
    dtype: str
    seconds: float


Progress = Callable[[int, int, str], None]


@dataclasses.dataclass(frozen=True)
class Plan:
    """The validated axes of a check: what every (spec, dtype) unit runs and how it is compared."""

    scenarios: tuple[Scenario, ...]
    dtypes: tuple[str, ...]
    variants: tuple[str, ...]
    to_run: tuple[str, ...]
    """The chosen variants plus the reference, in registry order."""
    reference: str
    references: tuple[str, ...] = ()
    """The references that are the forward itself (`compat.references`) each scenario is compared with."""


UnitResult = tuple[list[Cell], list[Skip]]


def plan(scenarios: Sequence[str | Scenario] | None = None, dtypes: Sequence[str] | None = None,
         variants: Sequence[str] | None = None, reference: str = DEFAULT_REFERENCE,
         references: Sequence[str] | None = None) -> Plan:
    """Check the axes (ValueError naming the valid names) and fix what every unit runs; `references`: None for
    the default ones (`compat.references.DEFAULT_REFERENCES`), [] for none."""
    chosen_scenarios = select_scenarios(list(scenarios) if scenarios is not None else None)
    chosen_dtypes = tuple(dtypes) if dtypes is not None else ("float32",)
    check_names(chosen_dtypes, DTYPES, "dtype", "dtypes")
    parse_variant(reference)
    chosen_variants = select(list(variants) if variants is not None else None)
    return Plan(tuple(chosen_scenarios), chosen_dtypes, tuple(chosen_variants),
                tuple(select([*chosen_variants, reference])), reference, select_references(references))


def units(specs: Sequence[GradientSpec], chosen: Plan) -> list[tuple[int, str]]:
    """(spec index, dtype) for every unit of work, in report order."""
    return [(index, dtype) for index in range(len(specs)) for dtype in chosen.dtypes]


def shard_units(specs: Sequence[GradientSpec], chosen: Plan, shard: Shard | None,
                durations: Mapping[str, float] | None = None) -> list[tuple[int, str]]:
    """The units `shard` runs (all of them for None), in report order: `compat.sharding.split` of `units`."""
    todo = units(specs, chosen)
    if shard is None:
        return todo
    labels = [unit_label(specs[index].name, dtype) for index, dtype in todo]
    return [todo[unit] for unit in split(labels, shard.count, durations)[shard.index - 1]]


def check(specs: Sequence[GradientSpec], scenarios: Sequence[str | Scenario] | None = None,
          dtypes: Sequence[str] | None = None, variants: Sequence[str] | None = None,
          reference: str = DEFAULT_REFERENCE, progress: Progress | None = None,
          references: Sequence[str] | None = None) -> CheckReport:
    """Run every spec in every dtype, scenario and variant, and compare each cell with `reference`.

    One graph or trace is built per (spec, dtype, context) for all its scenarios and variants. `scenarios`
    holds registered names or `Scenario` objects (e.g. one made from a user's loss). Every cell's gradient is
    also compared with `references`, the forward's own derivative (`autodiff`, `finite_difference`; None: both,
    []: none), reported in `Cell.forward` and never failing the check.
    """
    chosen = plan(scenarios, dtypes, variants, reference, references)
    return check_units(specs, chosen, units(specs, chosen), progress)


def check_units(specs: Sequence[GradientSpec], chosen: Plan, todo: Sequence[tuple[int, str]],
                progress: Progress | None = None, shard: Shard | None = None) -> CheckReport:
    """`check` of the units `todo` only (a shard's), in this process, each timed."""
    results: list[UnitResult] = []
    seconds: list[float] = []
    for step, (index, dtype) in enumerate(todo):
        if progress:
            progress(step, len(todo), f"{specs[index].name} {dtype}")
        start = time.perf_counter()
        results.append(check_unit(specs[index], dtype, chosen))
        seconds.append(time.perf_counter() - start)
    if progress:
        progress(len(todo), len(todo), "done")
    return assemble(specs, chosen, results, todo, seconds, shard)


def check_unit(spec: GradientSpec, dtype: str, chosen: Plan) -> UnitResult:
    """One spec in one dtype; a spec that cannot even be built becomes `error` cells naming why."""
    try:
        cells, skipped = _check_one(spec, dtype, chosen.scenarios, chosen.variants, chosen.to_run, chosen.reference)
        return _with_forward(spec, dtype, chosen, cells), skipped
    except UserCodeError as exc:
        return broken_spec_cells(spec.name, dtype, chosen, exc.problem), []
    except BaseException as exc:
        if not user_exception(exc):
            raise
        # Whatever else escapes (user code TensorFlow called back into, a gradcompat bug) sinks this
        # spec alone, named, and the others still run.
        return broken_spec_cells(spec.name, dtype, chosen, f"the check failed: {describe_exception(exc)}"), []


def assemble(specs: Sequence[GradientSpec], chosen: Plan, results: Sequence[UnitResult],
             todo: Sequence[tuple[int, str]] | None = None, seconds: Sequence[float] | None = None,
             shard: Shard | None = None) -> CheckReport:
    """The report from the results of the units `todo` (default: every unit), in that order (skips are
    reported once, for the first dtype); `seconds`: how long each took."""
    todo = units(specs, chosen) if todo is None else todo
    cells: list[Cell] = []
    skipped: list[Skip] = []
    for (_, dtype), (unit_cells, unit_skips) in zip(todo, results, strict=True):
        cells += unit_cells
        skipped += unit_skips if dtype == chosen.dtypes[0] else []
    timed = tuple(UnitTime(specs[index].name, dtype, took)
                  for (index, dtype), took in zip(todo, seconds or [0.0] * len(todo), strict=True))
    return CheckReport(tuple(cells), tuple(skipped), chosen.reference, tuple(s.name for s in specs),
                       tuple(s.name for s in chosen.scenarios), chosen.dtypes, chosen.variants,
                       descriptions={s.name: s.description for s in specs if s.description},
                       scenario_descriptions={s.name: s.description for s in chosen.scenarios},
                       units=timed, shard=shard, references=chosen.references)


def _check_one(spec: GradientSpec, dtype: str, scenarios: Sequence[Scenario], variants: Sequence[str],
               to_run: Sequence[str], reference: str) -> tuple[list[Cell], list[Skip]]:
    """One spec in one dtype: every applicable scenario in every variant, each compared with the baseline."""
    typed = cast_spec(spec, dtype)
    output_signature(typed)
    applicable, skipped = _applicable(typed, scenarios)
    if not applicable:
        return [], skipped
    ran = run_unit(typed, applicable, to_run, reference)
    return compare_unit(ran, dtype, variants, reference), skipped


@dataclasses.dataclass(frozen=True)
class UnitRun:
    """What the run stage hands the comparison for one spec in one dtype: values only, nothing left to run."""

    spec: str
    scenarios: tuple[str, ...]
    results: dict[tuple[str, str], VariantResult]
    """(variant, scenario) -> its result."""
    baselines: dict[str, str]
    """Scenario -> the variant its cells are compared with (`_baseline`)."""
    distributed: References | None
    """The single-device runs the distributed cells are compared with (None when no cell is distributed)."""


def run_unit(typed: GradientSpec, applicable: Sequence[Scenario], to_run: Sequence[str], reference: str) -> UnitRun:
    """Run every variant of `to_run` on every applicable scenario, and the single-device references of the
    distributed cells (per shard and on the whole batch scaled), each in its scenario's baseline variant."""
    downstreams = [scenario.downstream(typed) for scenario in applicable]
    results = run_matrix(typed, downstreams, to_run)
    by_key = {(r.variant, r.downstream): r for r in results}
    baselines = {s.name: _baseline(reference, {v: by_key[v, s.name] for v in to_run}) for s in applicable}
    distributed = [r for r in results if r.replicas]
    refs = (shard_references(typed, {d.name: d for d in downstreams}, distributed, baselines)
            if distributed else None)
    return UnitRun(typed.name, tuple(s.name for s in applicable), by_key, baselines, refs)


def compare_unit(ran: UnitRun, dtype: str, variants: Sequence[str], reference: str) -> list[Cell]:
    """The cells of one run unit, each compared with its scenario's baseline; runs no TensorFlow."""
    cells = []
    for scenario in ran.scenarios:
        baseline = ran.baselines[scenario]
        for variant in variants:
            result = ran.results[variant, scenario]
            differences = compare(result, ran.results[baseline, scenario]) if variant != baseline else ()
            if ran.distributed is not None and result.replicas:
                differences = compare_distributed(result, ran.results[baseline, scenario], ran.distributed)
            if variant == baseline:  # compared with nothing, but its own contract still counts
                differences = tuple(d for d in compare(result, result) if d.kind == "contract")
            native = is_native(variant)
            status = cell_status(result, differences)
            # A native error is always a failure, even where every variant fails alike (then none differs);
            # so is a native gradient TensorFlow silently accepted although it breaks the contract.
            unexpected = native and (status == "error" or any(d.kind == "contract" for d in differences) or (
                variant not in (baseline, reference) and any(d.breaking for d in differences)))
            cells.append(Cell(ran.spec, scenario, dtype, variant, native, status,
                              differences, result, baseline, unexpected))
    return cells


def _with_forward(spec: GradientSpec, dtype: str, chosen: Plan, cells: list[Cell]) -> list[Cell]:
    """The cells with their gradients compared with each reference that is the forward itself, computed once per
    scenario; a reference that fails is an `error` value naming it, never a failed check."""
    if not chosen.references or not cells:
        return cells
    typed = cast_spec(spec, dtype)
    scenarios = {scenario.name: scenario for scenario in chosen.scenarios}
    values: dict[str, tuple[ForwardValue, ...]] = {}
    for name in dict.fromkeys(cell.scenario for cell in cells):
        if name in scenarios:
            downstream = scenarios[name].downstream(typed)
            values[name] = tuple(_reference_value(ref, typed, downstream, dtype) for ref in chosen.references)
    return [dataclasses.replace(cell, forward=tuple(
        check_cell(value, cell.result, cell.result.compute_dtype or dtype) for value in values[cell.scenario]))
        if cell.scenario in values else cell for cell in cells]


def _reference_value(name: str, spec: GradientSpec, downstream: Any, dtype: str) -> ForwardValue:
    try:
        return compute(name, spec, downstream, dtype)
    except BaseException as exc:
        if not user_exception(exc):
            raise
        return ForwardValue(name, spec.name, downstream.name, "error", f"spec `{spec.name}`, reference `{name}`: "
                            f"failed: {describe_exception(exc)}", dtype=dtype)


def _baseline(reference: str, results: dict[str, VariantResult]) -> str:
    """The variant to compare with: the reference, or, where TensorFlow cannot run it (e.g. second order
    through a Defun grad_func) or it fails, the first native variant that ran."""
    if results[reference].status in ("ok", "not_called"):
        return reference
    fallback = [v for v in NATIVE_VARIANTS if v in results and results[v].status == "ok"]
    return fallback[0] if fallback else reference


def broken_spec_cells(spec: str, dtype: str, chosen: Plan, problem: str) -> list[Cell]:
    """A spec whose forward cannot even be built (or whose worker died): one `error` cell per variant, saying why."""
    cells, reference = [], chosen.reference
    for variant in chosen.variants:
        mechanism, context = variant.split("@")
        message = f"spec `{spec}`, variant `{variant}`: {problem}"
        result = VariantResult(spec=spec, variant=variant, mechanism=mechanism, context=context, status="error",
                               message=message, downstream="sum")
        difference = Difference("error", STATUS, message)
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
