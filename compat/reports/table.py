"""Terminal text: header, what was received, a symbol matrix per spec and dtype, pitfalls, unexpected, verdict."""

from __future__ import annotations

import dataclasses
import textwrap
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from compat.registry import CONTEXT_INFO, CONTEXT_NAMES
from compat.reports import forward, received
from compat.reports.json_report import DEFAULT_MAX_ARRAY_ELEMENTS, verdict
from compat.reports.view import FULL, View

if TYPE_CHECKING:
    from compat.checker import Cell, CheckReport
    from compat.comparison import Difference

SYMBOLS: dict[str, str] = {"same": "=", "differs": "≠", "not_called": "∅", "unsupported": "-", "error": "!",
                            "not_observable": "?"}
UNEXPECTED_MARK = "!"
WORDS: dict[str, str] = {"same": "same", "differs": "differs", "not_called": "not called",
                         "unsupported": "unsupported", "error": "error",
                         "not_observable": "not observable"}

PITFALL_STATUSES: dict[str, str] = {
    "not_called": "gradient function never called",
    "differs": "differs from the reference",
}
"""Cross-cell statuses that are silent migration pitfalls, and how to say them (unsupported/error are loud)."""

TAPE_CONTEXTS: tuple[str, ...] = tuple(name for name in CONTEXT_NAMES if CONTEXT_INFO[name].uses_tape)
"""Contexts where a tf.GradientTape asks for the gradient."""


def render(report: CheckReport, max_array_elements: int = DEFAULT_MAX_ARRAY_ELEMENTS, view: View = FULL) -> str:
    if view.summary and not view.quiet:
        from compat.reports import summary

        return summary.render(report)
    if view.quiet:
        lines = _section("Unexpected differences in native variants", _unexpected_lines(report), "  none")
        return "\n".join([*lines, "", verdict(report)]) + "\n"
    if view.show == "upstream":
        return "\n".join(received.text_section(report, view.only_differences)) + "\n"
    lines = [*header(report), "", *received.text_section(report, view.only_differences), "", *legend(report)]
    for spec in report.specs:
        for dtype in report.dtypes:
            if any(c.spec == spec and c.dtype == dtype for c in report.cells):
                lines += ["", *matrix(report, spec, dtype, view.only_differences)]
    if report.references:
        lines += ["", *forward.text_section(report)]
    pitfall_lines = [line for p in pitfalls(report) for line in (*_wrap(p.sentence(), 2), *_wrap(p.scope(), 6))]
    lines += ["", *_section("Migration pitfalls (legacy mechanism in a TF2 context; reported, not failing)",
                            pitfall_lines, "  none")]
    lines += ["", *_section("Unexpected differences in native variants", _unexpected_lines(report), "  none")]
    errors = error_reasons(report)
    if errors:
        lines += ["", ERRORS_TITLE, *(f"  {error.sentence()}" for error in errors)]  # one line each, as messages are
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
    cross = [c for c in report.cells if not c.native]
    return [
        f"compat-check: TensorFlow {report.tensorflow}, reference {report.reference}",
        f"tolerances: {tolerances}",
        f"cells: {len(report.cells)} ({len(native)} native, {len(cross)} cross), "
        f"{len(report.unexpected)} unexpected, {len(report.skipped)} scenarios skipped",
        f"  native: {counts_text(native)}",
        f"  cross:  {counts_text(cross)}",
    ]


OTHER_FORM = "other form"
"""The counts' name for `differs` cells whose differences are all representation (same values, other form)."""


def display_counts(cells: Iterable[Cell]) -> dict[str, int]:
    """Cells per status as reports show them: `differs` only when something that is learned differs; cells
    that differ only in representation are counted apart as `other form` (they never fail the verdict)."""
    counts = {"same": 0, OTHER_FORM: 0, **{WORDS[status]: 0 for status in SYMBOLS if status != "same"}}
    for cell in cells:
        counts[OTHER_FORM if representation_only(cell) else WORDS[cell.status]] += 1
    return counts


def counts_text(cells: Iterable[Cell]) -> str:
    return ", ".join(f"{label} {n}" for label, n in display_counts(cells).items())


def legend(report: CheckReport) -> list[str]:
    mechanisms, contexts = _axes(report.variants)
    short_m, short_c = abbreviations(mechanisms), abbreviations(contexts)
    symbols = " ".join(f"{symbol} {WORDS[status]}," for status, symbol in SYMBOLS.items())
    return [
        "legend: columns are mechanism@context, e.g. " + short_label(report.variants[0], short_m, short_c)
        + f" = {report.variants[0]}" if report.variants else "legend: no variants",
        "  * marks a native column (mechanism used as documented); others are cross (legacy in a TF2 context)",
        "  mechanisms: " + ", ".join(f"{short_m[m]} {m}" for m in mechanisms),
        *textwrap.wrap(", ".join(f"{short_c[c]} {c}" for c in contexts), LINE_LIMIT, initial_indent="  contexts:   ",
                       subsequent_indent=" " * 14, break_on_hyphens=False),
        f"  symbols:    {symbols}",
        f"              {REPRESENTATION_SYMBOL} {REPRESENTATION_WORDS} (None vs zeros, IndexedSlices vs dense), "
        f"{SYMBOLS['differs']}{UNEXPECTED_MARK} unexpected (native, breaking)",
    ]


def matrix(report: CheckReport, spec: str, dtype: str, only_differences: bool = False) -> list[str]:
    """Rows are scenarios, columns variants (grouped by mechanism), each cell one symbol; with
    `only_differences`, rows where no cell differs from its reference are left out."""
    mechanisms, contexts = _axes(report.variants)
    short_m, short_c = abbreviations(mechanisms), abbreviations(contexts)
    cells = {(c.scenario, c.variant): c for c in report.cells if c.spec == spec and c.dtype == dtype}
    natives = {c.variant for c in cells.values() if c.native}
    rows = [s for s in report.scenarios if any((s, v) in cells for v in report.variants)]
    if only_differences:
        rows = [s for s in rows if any(cells[s, v].differences for v in report.variants if (s, v) in cells)]
    groups = [[v for v in report.variants if v.split("@")[0] == m] for m in mechanisms]
    width = max([len(short_c[c]) for c in contexts] + [2]) + 2
    first = max([len(r) for r in rows] + [len("scenario")]) + 2
    description = report.descriptions.get(spec)
    title = f"{spec} · {dtype}" + (f": {description}" if description else "")
    if only_differences and not rows:
        return [title, "  every variant agrees with its reference in every scenario"]
    lines = [title]
    for block in _blocks(list(zip(mechanisms, groups, strict=True)), first, width):
        top = "".join(short_m[m].ljust(width * len(g) + 1) for m, g in block)
        sub = " ".join("".join((short_c[v.split("@")[1]] + ("*" if v in natives else "")).ljust(width) for v in g)
                       for _, g in block)
        lines += [" " * first + top.rstrip(), "scenario".ljust(first) + sub.rstrip()]
        for row in rows:
            marks = " ".join("".join(_symbol(cells.get((row, v))).ljust(width) for v in g) for _, g in block)
            lines.append(row.ljust(first) + marks.rstrip())
    return lines


LINE_LIMIT = 120
"""A matrix wider than this (many contexts) is printed as several blocks of whole mechanisms, one under another."""


def _blocks(groups: list[tuple[str, list[str]]], first: int, width: int) -> list[list[tuple[str, list[str]]]]:
    blocks: list[list[tuple[str, list[str]]]] = []
    used = first
    for mechanism, group in groups:
        needed = width * len(group) + 1
        if not blocks or used + needed > LINE_LIMIT:
            blocks.append([])
            used = first
        blocks[-1].append((mechanism, group))
        used += needed
    return blocks


@dataclasses.dataclass(frozen=True)
class Pitfall:
    """One spec's cross cells of one mechanism with one silent status, and the contexts and scenarios where."""

    spec: str
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
        return f"{self.spec}: {self.mechanism} under {self.where()}: {PITFALL_STATUSES[self.status]} in {count}"

    def scope(self) -> str:
        """Where exactly: contexts and scenarios, and how many of the cells differ in what (cells, not differences)."""
        scenarios = "every scenario" if self.all_scenarios else "scenarios " + ", ".join(self.scenarios)
        text = f"contexts {', '.join(self.contexts)}; {scenarios}"
        # dict.fromkeys, not a set: a set of strings iterates in an order that changes from process to process
        kinds = Counter(kind for c in self.cells for kind in dict.fromkeys(d.kind for d in c.differences)
                        if kind != self.status)
        if not kinds:
            return text
        listed = ", ".join(f"{kind} in {n}" for kind, n in kinds.most_common())
        if self.status == "not_called":
            return (f"{text}; the input gradients TensorFlow computed instead (without your function) differ "
                    f"from the reference's: {listed} of these cells")
        return f"{text}; cells by difference: {listed}"


def pitfalls(report: CheckReport) -> list[Pitfall]:
    """Cross variants whose gradient function is silently bypassed or differs, per spec, mechanism and status."""
    groups: dict[tuple[str, str, str], list[Cell]] = defaultdict(list)
    for cell in report.cells:
        # A cross cell whose status matches the reference's (stop_gradient: nobody is called) is no pitfall.
        if not cell.native and cell.status in PITFALL_STATUSES and cell.differences:
            groups[cell.spec, cell.mechanism, cell.status].append(cell)
    _, context_order = _axes(report.variants)
    found = []
    for (spec, mechanism, status), cells in groups.items():
        scenarios = tuple(s for s in report.scenarios if any(c.scenario == s for c in cells))
        # Scenarios where the reference's gradient function ran, so bypassing it can matter.
        ran = {c.scenario for c in report.cells if c.spec == spec and c.variant == c.reference and c.status == "same"}
        found.append(Pitfall(spec, mechanism, status,
                             tuple(c for c in context_order if any(x.context == c for x in cells)),
                             tuple(cells), scenarios, set(scenarios) >= ran))
    specs = list(report.specs)
    return sorted(found, key=lambda p: (specs.index(p.spec) if p.spec in specs else len(specs),
                                        list(PITFALL_STATUSES).index(p.status), -len(p.cells), p.mechanism))


ERRORS_TITLE = "Errors in cross variants (the cell could not run; reported, not failing):"


@dataclasses.dataclass(frozen=True)
class ErrorReason:
    """Error cells of one spec, dtype and variant that failed for the same reason, and their scenarios."""

    spec: str
    dtype: str
    variant: str
    reason: str
    scenarios: tuple[str, ...]

    def sentence(self) -> str:
        count = f"{len(self.scenarios)} scenario" + ("" if len(self.scenarios) == 1 else "s")
        return f"{self.spec} · {self.dtype} · {self.variant} in {count} ({', '.join(self.scenarios)}): {self.reason}"


def error_reasons(report: CheckReport) -> list[ErrorReason]:
    """The error cells not listed as unexpected (native errors are), grouped by spec, dtype, variant and reason."""
    groups: dict[tuple[str, str, str, str], list[str]] = defaultdict(list)
    for cell in report.cells:
        if cell.status == "error" and not cell.unexpected:
            groups[cell.spec, cell.dtype, cell.variant, error_reason(cell)].append(cell.scenario)
    return [ErrorReason(*key, tuple(scenarios)) for key, scenarios in groups.items()]


def error_reason(cell: Cell) -> str:
    """Why an error cell failed: its message without the `spec ..., variant ...: ` it starts with."""
    message = cell.result.message or (cell.differences[0].detail if cell.differences else "no reason recorded")
    return message.removeprefix(f"spec `{cell.spec}`, variant `{cell.variant}`: ")


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


INSTEAD = "computed by TensorFlow instead: your function never ran"


def where(cell: Cell, difference: Difference) -> str:
    """Where a difference is; for a cell whose function never ran, input gradients say who computed them."""
    if cell.status == "not_called" and difference.location.aspect in ("input_grad", "input_grads"):
        return f"{difference.where} ({INSTEAD})"
    return difference.where


def cell_title(cell: Cell) -> str:
    """One line saying what a cell is and why it has its status."""
    text = f"{cell.variant} [{'native' if cell.native else 'cross'}] {WORDS[cell.status]}"
    if cell.unexpected:
        text += " (UNEXPECTED)"
    if cell.differences:
        text += f": {where(cell, cell.differences[0])}: {cell.differences[0].detail}"
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


def compared_with(cell: Cell) -> str:
    """What a listed cell was compared with; the reference itself is compared with nothing."""
    return "the reference itself" if cell.variant == cell.reference else f"vs {cell.reference}"


def _unexpected_lines(report: CheckReport) -> list[str]:
    lines = []
    for cell in report.unexpected:
        lines.append(f"  {cell.spec} · {cell.dtype} · {cell.scenario} · {cell.variant} ({compared_with(cell)}):")
        lines += [f"    [{d.kind}] {where(cell, d)}: {d.detail}" for d in cell.differences]
        if cell.result.message and not any(cell.result.message in d.detail for d in cell.differences):
            lines.append(f"    [{cell.status}] {cell.result.message}")
    return lines


def _wrap(text: str, indent: int) -> list[str]:
    return textwrap.wrap(text, width=120, initial_indent=" " * indent, subsequent_indent=" " * (indent + 2))


def _section(title: str, body: list[str], empty: str) -> list[str]:
    return [title, *(body or [empty])]
