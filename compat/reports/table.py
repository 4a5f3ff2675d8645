"""Terminal text: header, a compact symbol matrix per spec and dtype, pitfalls, unexpected differences, verdict."""

from __future__ import annotations

import dataclasses
import textwrap
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from compat.contexts import CONTEXTS
from compat.reports.json_report import DEFAULT_MAX_ARRAY_ELEMENTS, status_counts, verdict

if TYPE_CHECKING:
    from compat.matrix import Cell, CheckReport

SYMBOLS: dict[str, str] = {"same": "=", "differs": "≠", "not_called": "∅", "unsupported": "-", "error": "!"}
UNEXPECTED_MARK = "!"
WORDS: dict[str, str] = {"same": "same", "differs": "differs", "not_called": "not called",
                         "unsupported": "unsupported", "error": "error"}

PITFALL_STATUSES: dict[str, str] = {
    "not_called": "gradient function never called",
    "differs": "differs from the reference",
}
"""Cross-cell statuses that are silent migration pitfalls, and how to say them (unsupported/error are loud)."""

TAPE_CONTEXTS: tuple[str, ...] = tuple(name for name, context in CONTEXTS.items() if context.uses_tape)
"""Contexts where a tf.GradientTape asks for the gradient."""


def render(report: CheckReport, max_array_elements: int = DEFAULT_MAX_ARRAY_ELEMENTS) -> str:
    lines = [*header(report), "", *legend(report)]
    for spec in report.specs:
        for dtype in report.dtypes:
            if any(c.spec == spec and c.dtype == dtype for c in report.cells):
                lines += ["", *matrix(report, spec, dtype)]
    pitfall_lines = [line for p in pitfalls(report) for line in (f"  {p.sentence()}", *_wrap(p.scope(), 6))]
    lines += ["", *_section("Migration pitfalls (legacy mechanism in a TF2 context; reported, not failing)",
                            pitfall_lines, "  none")]
    lines += ["", *_section("Unexpected differences in native variants", _unexpected_lines(report), "  none")]
    notes = representation_notes(report)
    if notes:
        lines += ["", "Representation differences in native variants (same values, other form; not failing):",
                  *(line for note in notes for line in _wrap(note, 2))]
    lines += ["", *_section("Skipped scenarios",
                            [f"  {s.spec} / {s.scenario}: {s.reason}" for s in report.skipped], "  none")]
    lines += ["", verdict(report)]
    return "\n".join(lines) + "\n"


def header(report: CheckReport) -> list[str]:
    tolerances = "; ".join(f"{dtype} rtol={t['rtol']:g} atol={t['atol']:g}"
                           for dtype, t in report.tolerances.items() if dtype in report.dtypes)
    native = [c for c in report.cells if c.native]
    counts = ", ".join(f"{WORDS[s]} {n}" for s, n in status_counts(report.cells).items())
    return [
        f"compat-check: TensorFlow {report.tensorflow}, reference {report.reference}",
        f"tolerances: {tolerances}",
        f"cells: {len(report.cells)} ({len(native)} native, {len(report.cells) - len(native)} cross), "
        f"{len(report.unexpected)} unexpected, {len(report.skipped)} scenarios skipped",
        f"  {counts}",
    ]


def legend(report: CheckReport) -> list[str]:
    mechanisms, contexts = _axes(report.variants)
    short_m, short_c = abbreviations(mechanisms), abbreviations(contexts)
    symbols = " ".join(f"{symbol} {WORDS[status]}," for status, symbol in SYMBOLS.items())
    return [
        "legend: columns are mechanism@context, e.g. " + short_label(report.variants[0], short_m, short_c)
        + f" = {report.variants[0]}" if report.variants else "legend: no variants",
        "  * marks a native column (mechanism used as documented); others are cross (legacy in a TF2 context)",
        "  mechanisms: " + ", ".join(f"{short_m[m]} {m}" for m in mechanisms),
        "  contexts:   " + ", ".join(f"{short_c[c]} {c}" for c in contexts),
        f"  symbols:    {symbols}",
        f"              {REPRESENTATION_SYMBOL} {REPRESENTATION_WORDS} (None vs zeros, IndexedSlices vs dense), "
        f"{SYMBOLS['differs']}{UNEXPECTED_MARK} unexpected (native, breaking)",
    ]


def matrix(report: CheckReport, spec: str, dtype: str) -> list[str]:
    """Rows are scenarios, columns variants (grouped by mechanism), each cell one symbol."""
    mechanisms, contexts = _axes(report.variants)
    short_m, short_c = abbreviations(mechanisms), abbreviations(contexts)
    cells = {(c.scenario, c.variant): c for c in report.cells if c.spec == spec and c.dtype == dtype}
    natives = {c.variant for c in cells.values() if c.native}
    rows = [s for s in report.scenarios if any((s, v) in cells for v in report.variants)]
    groups = [[v for v in report.variants if v.split("@")[0] == m] for m in mechanisms]
    width = max([len(short_c[c]) for c in contexts] + [2]) + 2
    first = max([len(r) for r in rows] + [len("scenario")]) + 2
    top = "".join(short_m[m].ljust(width * len(g) + 1) for m, g in zip(mechanisms, groups, strict=True))
    sub = " ".join("".join((short_c[v.split("@")[1]] + ("*" if v in natives else "")).ljust(width) for v in g)
                   for g in groups)
    lines = [f"{spec} · {dtype}", " " * first + top.rstrip(), "scenario".ljust(first) + sub.rstrip()]
    for row in rows:
        marks = " ".join("".join(_symbol(cells.get((row, v))).ljust(width) for v in g) for g in groups)
        lines.append(row.ljust(first) + marks.rstrip())
    return lines


@dataclasses.dataclass(frozen=True)
class Pitfall:
    """Cross cells of one mechanism with one silent status, and the contexts and scenarios where it happens."""

    mechanism: str
    status: str
    contexts: tuple[str, ...]
    cells: tuple[Cell, ...]
    scenarios: tuple[str, ...]
    all_scenarios: bool

    def where(self) -> str:
        tapes = [c for c in self.contexts if c in TAPE_CONTEXTS]
        others = [c for c in self.contexts if c not in TAPE_CONTEXTS]
        parts = ["any GradientTape"] if len(tapes) == len(TAPE_CONTEXTS) else tapes
        names = [*parts, *others]
        return ", ".join(names[:-1]) + " and " + names[-1] if len(names) > 1 else "".join(names)

    def sentence(self) -> str:
        count = f"{len(self.cells)} cell" + ("" if len(self.cells) == 1 else "s")
        return f"{self.mechanism} under {self.where()}: {PITFALL_STATUSES[self.status]} in {count}"

    def scope(self) -> str:
        """Where exactly: contexts, scenarios and, for differences, their kinds."""
        scenarios = "every scenario" if self.all_scenarios else "scenarios " + ", ".join(self.scenarios)
        text = f"contexts {', '.join(self.contexts)}; {scenarios}"
        kinds = Counter(d.kind for c in self.cells for d in c.differences if d.kind != self.status)
        if kinds:
            text += "; differences: " + ", ".join(f"{kind} x{n}" for kind, n in kinds.most_common())
        return text


def pitfalls(report: CheckReport) -> list[Pitfall]:
    """Cross variants whose gradient function is silently bypassed or differs, grouped by mechanism and status."""
    groups: dict[tuple[str, str], list[Cell]] = defaultdict(list)
    for cell in report.cells:
        # A cross cell whose status matches the reference's (stop_gradient: nobody is called) is no pitfall.
        if not cell.native and cell.status in PITFALL_STATUSES and cell.differences:
            groups[cell.mechanism, cell.status].append(cell)
    _, context_order = _axes(report.variants)
    found = []
    for (mechanism, status), cells in groups.items():
        scenarios = tuple(s for s in report.scenarios if any(c.scenario == s for c in cells))
        # Scenarios where the reference's gradient function ran, so bypassing it can matter.
        ran = {c.scenario for c in report.cells
               if c.spec in {x.spec for x in cells} and c.variant == c.reference and c.status == "same"}
        found.append(Pitfall(mechanism, status, tuple(c for c in context_order if any(x.context == c for x in cells)),
                             tuple(cells), scenarios, set(scenarios) >= ran))
    return sorted(found, key=lambda p: (list(PITFALL_STATUSES).index(p.status), -len(p.cells), p.mechanism))


def representation_notes(report: CheckReport) -> list[str]:
    """Native cells that differ only in representation (e.g. IndexedSlices vs dense), counted by kind."""
    kinds: Counter[str] = Counter()
    variants: dict[str, set[str]] = defaultdict(set)
    for cell in report.cells:
        if cell.native and cell.status == "differs" and not cell.unexpected:
            for difference in cell.differences:
                kinds[difference.kind] += 1
                variants[difference.kind].add(cell.variant)
    return [f"{kind} in {n} cells ({', '.join(sorted(variants[kind]))})" for kind, n in kinds.most_common()]


def abbreviations(names: Sequence[str]) -> dict[str, str]:
    """Short, unique labels: the initials of each `_` part, keeping parts with digits (v1_session -> v1s)."""
    short: dict[str, str] = {}
    for name in names:
        label = "".join(part if any(ch.isdigit() for ch in part) else part[:1] for part in name.split("_"))
        candidate, suffix = label, 2
        while candidate in short.values():
            candidate, suffix = f"{label}{suffix}", suffix + 1
        short[name] = candidate
    return short


def short_label(variant: str, short_m: dict[str, str], short_c: dict[str, str]) -> str:
    mechanism, _, context = variant.partition("@")
    return f"{short_m[mechanism]}@{short_c[context]}"


def cell_title(cell: Cell) -> str:
    """One line saying what a cell is and why it has its status."""
    text = f"{cell.variant} [{'native' if cell.native else 'cross'}] {WORDS[cell.status]}"
    if cell.unexpected:
        text += " (UNEXPECTED)"
    if cell.differences:
        text += f": {cell.differences[0].where}: {cell.differences[0].detail}"
    elif cell.result.message:
        text += f": {cell.result.message}"
    return text


def representation_only(cell: Cell) -> bool:
    """A `differs` cell whose differences are all in form (None vs zeros, IndexedSlices vs dense)."""
    return cell.status == "differs" and not any(d.breaking for d in cell.differences)


REPRESENTATION_SYMBOL = "≈"
REPRESENTATION_WORDS = "same values, other form"


def cell_symbol(cell: Cell) -> str:
    """The cell's symbol: `≈` for representation-only differences, the status symbol otherwise."""
    if representation_only(cell):
        return REPRESENTATION_SYMBOL
    return SYMBOLS[cell.status] + (UNEXPECTED_MARK if cell.unexpected else "")


def _symbol(cell: Cell | None) -> str:
    return "" if cell is None else cell_symbol(cell)


def _axes(variants: Iterable[str]) -> tuple[list[str], list[str]]:
    mechanisms: dict[str, None] = {}
    contexts: dict[str, None] = {}
    for variant in variants:
        mechanism, _, context = variant.partition("@")
        mechanisms[mechanism] = None
        contexts[context] = None
    return list(mechanisms), list(contexts)


def _unexpected_lines(report: CheckReport) -> list[str]:
    lines = []
    for cell in report.unexpected:
        lines.append(f"  {cell.spec} · {cell.dtype} · {cell.scenario} · {cell.variant} (vs {cell.reference}):")
        lines += [f"    [{d.kind}] {d.where}: {d.detail}" for d in cell.differences]
        if cell.result.message and not any(cell.result.message in d.detail for d in cell.differences):
            lines.append(f"    [{cell.status}] {cell.result.message}")
    return lines


def _wrap(text: str, indent: int) -> list[str]:
    return textwrap.wrap(text, width=120, initial_indent=" " * indent, subsequent_indent=" " * (indent + 2))


def _section(title: str, body: list[str], empty: str) -> list[str]:
    return [title, *(body or [empty])]
