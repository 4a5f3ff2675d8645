"""GitHub-flavoured markdown: summary, a scenario × variant table per spec and dtype, pitfalls, skipped."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from compat.reports import forward, received
from compat.reports.json_report import DEFAULT_MAX_ARRAY_ELEMENTS, verdict
from compat.reports.table import (
    ERRORS_TITLE,
    REPRESENTATION_WORDS,
    WORDS,
    compared_with,
    counts_text,
    error_reasons,
    pitfalls,
    representation_notes,
    representation_only,
    where,
)
from compat.reports.view import FULL, View

if TYPE_CHECKING:
    from compat.checker import Cell, CheckReport


def render(report: CheckReport, max_array_elements: int = DEFAULT_MAX_ARRAY_ELEMENTS, view: View = FULL) -> str:
    if view.quiet:
        lines = [f"**{verdict(report)}**", "", "## Unexpected differences in native variants", ""]
        lines += [line for cell in report.unexpected for line in _unexpected(cell)] or ["None."]
        return "\n".join(lines) + "\n"
    if view.show == "upstream":
        return "\n".join(received.markdown_section(report, view.only_differences)) + "\n"
    native = sum(cell.native for cell in report.cells)
    tolerances = ", ".join(f"{d} rtol={t['rtol']:g} atol={t['atol']:g}"
                           for d, t in report.tolerances.items() if d in report.dtypes)
    lines = [
        "# compat-check report", "",
        f"**{verdict(report)}**", "",
        f"- TensorFlow: `{report.tensorflow}`",
        f"- Reference: `{report.reference}`",
        f"- Tolerances: {tolerances}",
        f"- Cells: {len(report.cells)} ({native} native, {len(report.cells) - native} cross); "
        f"unexpected {len(report.unexpected)}",
        f"  - native: {counts_text(c for c in report.cells if c.native)}",
        f"  - cross: {counts_text(c for c in report.cells if not c.native)}",
        "", "Columns in **bold** are native (the mechanism used as documented); the others are *cross*: "
        "a legacy mechanism in a TF2 context.", "",
        *received.markdown_section(report, view.only_differences),
    ]
    for spec in report.specs:
        for dtype in report.dtypes:
            if any(c.spec == spec and c.dtype == dtype for c in report.cells):
                description = report.descriptions.get(spec)
                lines += ["", f"## `{spec}` · {dtype}", *(["", _inline(description)] if description else []), "",
                          matrix_table(report, spec, dtype, only_differences=view.only_differences)]
    references = forward.markdown_section(report)
    if references:
        lines += ["", *references]
    lines += ["", "## Unexpected differences in native variants", ""]
    lines += [line for cell in report.unexpected for line in _unexpected(cell)] or ["None."]
    errors = error_reasons(report)
    if errors:
        lines += ["", f"## {ERRORS_TITLE.rstrip(':')}", ""]
        lines += [f"- `{e.spec}` · {e.dtype} · `{e.variant}` in {len(e.scenarios)} "
                  f"scenario{'s' * (len(e.scenarios) != 1)} ({', '.join(f'`{s}`' for s in e.scenarios)}): "
                  f"{_inline(e.reason)}" for e in errors]
    lines += ["", "## Migration pitfalls", ""]
    lines += [f"- **{_inline(p.sentence())}** ({_inline(p.scope())})" for p in pitfalls(report)] or ["None."]
    notes = representation_notes(report)
    if notes:
        lines += ["", "## Representation differences in native variants (not failing)", ""]
        lines += [f"- {_inline(note)}" for note in notes]
    lines += ["", "## Skipped scenarios", ""]
    lines += [f"- `{s.spec}` / `{s.scenario}`: {_inline(s.reason)}" for s in report.skipped] or ["None."]
    return "\n".join(lines) + "\n"


def matrix_table(report: CheckReport, spec: str, dtype: str, variants: Sequence[str] | None = None,
                 only_differences: bool = False) -> str:
    """A markdown table for one spec and dtype: one row per scenario, one column per variant (all by default).

    Cells are short words (`same`, `differs`, `not called`, `unsupported`, `error`); unexpected ones are
    bold and flagged; with `only_differences`, rows where no cell differs are left out. Reusable in documents,
    e.g. the migration guide, with a chosen subset of `variants`.
    """
    columns = list(report.variants if variants is None else variants)
    cells = {(c.scenario, c.variant): c for c in report.cells if c.spec == spec and c.dtype == dtype}
    natives = {c.variant for c in cells.values() if c.native}
    header = ["scenario", *(_column(v, v in natives) for v in columns)]
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(["---"] + [":---:"] * len(columns)) + "|"]
    for scenario in report.scenarios:
        row = [cells.get((scenario, v)) for v in columns]
        if any(row) and (not only_differences or any(c is not None and c.differences for c in row)):
            lines.append("| " + " | ".join([f"`{scenario}`", *(_word(c) for c in row)]) + " |")
    return "\n".join(lines)


def _column(variant: str, native: bool) -> str:
    mechanism, _, context = variant.partition("@")
    text = f"{mechanism}<br>@{context}"
    return f"**{text}**" if native else text


def _word(cell: Cell | None) -> str:
    if cell is None:
        return ""
    word = REPRESENTATION_WORDS if representation_only(cell) else WORDS[cell.status]
    return f"**{word} (unexpected)**" if cell.unexpected else word


def _unexpected(cell: Cell) -> list[str]:
    head = f"- `{cell.spec}` · {cell.dtype} · `{cell.scenario}` · `{cell.variant}` ({compared_with(cell)})"
    lines = [head, *(f"  - {d.kind}: {_inline(where(cell, d) + ': ' + d.detail)}" for d in cell.differences)]
    if cell.result.message and not any(cell.result.message in d.detail for d in cell.differences):
        lines.append(f"  - {cell.status}: {_inline(cell.result.message)}")
    return lines


def _inline(text: str) -> str:
    """Text safe in a markdown line or table cell: pipes escaped, angle brackets as entities."""
    return text.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;").replace("\n", " ")
