"""The one-screen answer of a check: what the upstream was, where mechanisms disagree, what fails, the verdict.

`compat-check`'s default text output. Per spec one entry on what its gradient function received across the
scenarios (from the most variants that agree; ones only under `sum`, 3 under `scaled`, IndexedSlices after
`gather`...), the migration pitfalls ranked by the cells they touch, the unexpected cells with their reason,
error cells grouped by reason, and the verdict. Everything else is one flag away (`--details`).
"""

from __future__ import annotations

import textwrap
from collections import Counter, defaultdict
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from compat.dtypes import tolerance_for
from compat.reports import forward, received
from compat.reports.json_report import verdict
from compat.reports.table import (
    Pitfall,
    compared_with,
    counts_text,
    error_reason,
    pitfalls,
    where,
)

if TYPE_CHECKING:
    from compat.checker import Cell, CheckReport
    from compat.results import Upstream

WIDTH = 120
LISTED = 8
"""Pitfalls, unexpected cells and error reasons listed at most; the rest are counted, with a pointer to --details."""
_SHORT = {"not_called": "never called", "differs": "differs from the reference"}
"""The pitfall statuses (`PITFALL_STATUSES`) as a line has room for them."""
DETAILS_HINT = ("whole report (every matrix, every upstream, every cell's reason): add --details, or write it with "
                "--format=html --output=report.html")


def render(report: CheckReport) -> str:
    """The report in about one screen of text (the catalogue: under 60 lines)."""
    lines = [*_header(report), "", *_upstream_section(report), *_forward_section(report), "",
             *_pitfall_section(report), "", *_unexpected_section(report)]
    errors = _error_section(report)
    if errors:
        lines += ["", *errors]
    if report.skipped:
        lines += ["", f"skipped: {len(report.skipped)} spec/scenario pairs ("
                  + ", ".join(f"{s.spec} / {s.scenario}" for s in report.skipped[:3])
                  + (", ..." if len(report.skipped) > 3 else "") + ")"]
    lines += ["", DETAILS_HINT, verdict(report)]
    return "\n".join(lines) + "\n"


def _header(report: CheckReport) -> list[str]:
    native = [c for c in report.cells if c.native]
    cross = [c for c in report.cells if not c.native]
    return [
        f"compat-check: TensorFlow {report.tensorflow}; {_count(report.specs, 'spec')} x "
        f"{_count(report.scenarios, 'scenario')} x {_count(report.variants, 'variant')} "
        f"({', '.join(report.dtypes)}), reference {report.reference}",
        f"  native cells {len(native)}: {counts_text(native)}",
        f"  cross cells {len(cross)}: {counts_text(cross)}",
    ]


def _count(items: Sequence[str], noun: str) -> str:
    return f"{len(items)} {noun}{'' if len(items) == 1 else 's'}"


def upstream_word(upstreams: Sequence[Upstream]) -> str:
    """What a first call received, in a word per output: `ones`, `zeros`, `all 3`, `-1..2`, `IndexedSlices`,
    `None`; outputs joined with ` | `."""
    return " | ".join(_word(upstream) for upstream in upstreams)


def _word(upstream: Upstream, exact: bool = True) -> str:
    if upstream.kind == "none":
        return "None"
    if upstream.kind == "indexed_slices":
        return "IndexedSlices"
    if upstream.value is None:
        return "a tensor"
    values = np.asarray(upstream.value, np.float64).ravel()
    if not values.size:
        return "empty"
    finite = values[~np.isnan(values)]
    if not finite.size:
        return "NaN"
    low, high = float(finite.min()), float(finite.max())
    if low == high:
        word = {1.0: "ones", 0.0: "zeros"}.get(low, f"all {low:.4g}" if exact else "constant")
    else:
        word = f"{low:.4g}..{high:.4g}" if exact else "varies"
    return word if finite.size == values.size else f"{word} with NaN"


def _kind_word(upstreams: Sequence[Upstream]) -> str:
    """Like `upstream_word`, with `varies` for any spread of values and `constant` for any other constant."""
    return " | ".join(_word(upstream, exact=False) for upstream in upstreams)


def _upstream_section(report: CheckReport) -> list[str]:
    """Specs whose upstreams read the same are one entry: per scenario, what most variants received."""
    dtype = report.dtypes[0] if report.dtypes else ""
    lines = ["Is `grad` always ones? What the gradient functions received, by scenario (what most variants got"
             + (f"; {dtype}" if len(report.dtypes) > 1 else "") + "):"]
    by_spec: dict[str, list[received.Scene]] = defaultdict(list)
    for scene in received.scenes(report):
        if scene.dtype == dtype:
            by_spec[scene.spec].append(scene)
    entries: dict[str, list[str]] = {}
    for spec, scenes in by_spec.items():
        entries.setdefault(_spec_upstreams(scenes), []).append(spec)
    for sentence, specs in entries.items():
        lines += textwrap.wrap(f"{_names(specs, 'spec', 12)}: {sentence}", WIDTH, initial_indent="  ",
                               subsequent_indent="      ", break_on_hyphens=False)
    return lines


def _spec_upstreams(scenes: Sequence[received.Scene]) -> str:
    """`ones in sum; constant in scaled, mean; IndexedSlices in gather; varies in 9; never called in stop_gradient;
    variants disagree on the values in 2 (gather, second_order)`."""
    groups: dict[str, list[str]] = {}
    for scene in scenes:
        if scene.received:
            word = _kind_word(scene.received[0].upstreams)
        else:
            word = "never called" if "not_called" in scene.not_run else "not run (" + ", ".join(scene.not_run) + ")"
        groups.setdefault(word, []).append(scene.scenario)
    parts = [f"{word} in {_few(scenarios)}" for word, scenarios in groups.items()]
    disagree = [scene.scenario for scene in scenes if _values_disagree(scene)]
    if disagree:
        parts.append(f"variants disagree on the values in {_few(disagree)}")
    return "; ".join(parts)


def _few(names: Sequence[str], shown: int = 3) -> str:
    if len(names) <= shown:
        return ", ".join(names)
    return f"{len(names)} ({', '.join(names[:shown])}, ...)"


def _values_disagree(scene: received.Scene) -> bool:
    """Whether variants that ran received other kinds or values (a static shape alone does not count)."""
    first = scene.received[0].upstreams if scene.received else ()
    return any(not _same_values(first, group.upstreams) for group in scene.received[1:])


def _same_values(a: Sequence[Upstream], b: Sequence[Upstream]) -> bool:
    if len(a) != len(b):
        return False
    for x, y in zip(a, b, strict=True):
        if x.kind != y.kind or (x.value is None) != (y.value is None):
            return False
        if x.value is not None and y.value is not None and not _close(x.value, y.value):
            return False
    return True


def _close(a: np.ndarray, b: np.ndarray) -> bool:
    """Equal shapes and values within the looser tolerance of the two dtypes (float16 beside float32)."""
    if a.shape != b.shape:
        return False
    loose = max((tolerance_for(a.dtype), tolerance_for(b.dtype)), key=lambda t: t.rtol)
    return bool(np.allclose(np.asarray(a, np.float64), np.asarray(b, np.float64), rtol=loose.rtol, atol=loose.atol,
                            equal_nan=True))


def _forward_section(report: CheckReport) -> list[str]:
    """What the custom gradient changes against the forward's own derivative, by spec (none without references)."""
    body = forward.summary_lines(report)
    if not body:
        return []
    return ["", "What the custom gradient changes against the forward itself (autodiff: TensorFlow's own gradient; "
            "finite_difference: float64), by scenario:", *(_cut(line) for line in body)]


def _pitfall_section(report: CheckReport) -> list[str]:
    """Pitfalls of every spec merged by mechanism, contexts and status, most cells first, one line each."""
    merged: dict[tuple[str, tuple[str, ...], str], list[Pitfall]] = defaultdict(list)
    for pitfall in pitfalls(report):
        merged[pitfall.mechanism, pitfall.contexts, pitfall.status].append(pitfall)
    ranked = sorted(merged.items(), key=lambda item: -sum(len(p.cells) for p in item[1]))
    lines = ["Migration pitfalls (a legacy mechanism in a TF2 context; reported, not failing), most cells first:"]
    for (mechanism, contexts, status), group in ranked[:LISTED]:
        cells = sum(len(p.cells) for p in group)
        where_ = group[0].where()
        if len(where_) > 40:
            where_ = f"{len(contexts)} contexts ({', '.join(contexts[:2])}, ...)"
        specs = f"{len(group)} specs" if len(group) > 1 else group[0].spec
        lines.append(_cut(f"  {cells:>5} cells, {specs}: {mechanism} under {where_}: {_SHORT[status]}",
                          WIDTH))
    if len(ranked) > LISTED:
        lines.append(f"  ... {len(ranked) - LISTED} more (--details)")
    if not ranked:
        lines.append("  none")
    return lines


def _names(names: Sequence[str], noun: str, shown: int = 4) -> str:
    text = ", ".join(names[:shown])
    if len(names) > shown:
        text += f" and {len(names) - shown} more"
    return f"{len(names)} {noun}{'' if len(names) == 1 else 's'}: {text}" if len(names) > 1 else text


def _unexpected_section(report: CheckReport) -> list[str]:
    cells = report.unexpected
    lines = [f"Unexpected differences in native variants: {len(cells) or 'none'}"]
    lines += ["  " + _cut(_unexpected_line(cell)) for cell in cells[:LISTED]]
    if len(cells) > LISTED:
        lines.append(f"  ... {len(cells) - LISTED} more (--details)")
    return lines


def _unexpected_line(cell: Cell) -> str:
    head = f"{cell.spec} · {cell.dtype} · {cell.scenario} · {cell.variant} ({compared_with(cell)})"
    if cell.differences:
        first = cell.differences[0]
        more = f" (+{len(cell.differences) - 1} more)" if len(cell.differences) > 1 else ""
        return f"{head}: [{first.kind}] {where(cell, first)}: {first.detail}{more}"
    return f"{head}: [{cell.status}] {cell.result.message or 'no reason recorded'}"


def _error_section(report: CheckReport) -> list[str]:
    """Cross error cells grouped by reason, the most common first (native ones are unexpected, listed above)."""
    by_reason: Counter[str] = Counter()
    variants: dict[str, set[str]] = defaultdict(set)
    for cell in report.cells:
        if cell.status == "error" and not cell.unexpected:
            reason = error_reason(cell)
            by_reason[reason] += 1
            variants[reason].add(cell.variant)
    if not by_reason:
        return []
    lines = [f"Errors in cross variants ({sum(by_reason.values())} cells could not run; reported, not failing):"]
    for reason, count in by_reason.most_common(LISTED):
        lines.append("  " + _cut(f"{count:>4} cells ({_names(sorted(variants[reason]), 'variant', 2)}): {reason}"))
    if len(by_reason) > LISTED:
        lines.append(f"  ... {len(by_reason) - LISTED} more reasons (--details)")
    return lines


def _cut(line: str, width: int = WIDTH * 2 - 2) -> str:
    """One line that fits two screen widths once indented by 2 (a reason can be a whole traceback line)."""
    line = " ".join(line.splitlines())
    return line if len(line) <= width else line[:width - 1] + "…"
