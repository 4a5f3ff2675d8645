"""The guide's tables, from the guide run: upstream values per mechanism, one mechanism across contexts, and
the upstreams of unused and integer outputs. Every table fits 120 characters a line."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from compat.checker import Cell, CheckReport
from compat.registry import BASIC_CONTEXTS, CONTEXT_INFO, MECHANISM_INFO
from compat.reports.table import representation_only
from compat.results import Upstream
from tools.guide.run import cells

MAX_WIDTH = 120
CONTEXTS = BASIC_CONTEXTS
CONTEXT_HEADERS = {name: CONTEXT_INFO[name].label for name in CONTEXTS}
MECHANISMS = {name: info.label for name, info in MECHANISM_INFO.items()}
_NOT_RUN = {"not_called": "not called", "unsupported": "unsupported", "error": "error"}


def values(array: np.ndarray | None) -> str:
    """`[1, -2, 3]`: three significant digits, integers without a point, at most 6 elements shown."""
    if array is None:
        return "None"
    flat = np.asarray(array, np.float64).ravel()
    shown = ", ".join(f"{v:.3g}" for v in flat[:6]) + (", …" if flat.size > 6 else "")
    return f"[{shown}]"


def upstream_text(upstream: Upstream) -> str:
    """One upstream as the guide shows it: values, `[v] at [i]` for IndexedSlices (values at indices), `None`."""
    if upstream.kind == "none":
        return "None"
    if upstream.kind == "indexed_slices":
        return f"{values(upstream.value)} at {values(upstream.indices)}"
    return values(upstream.value)


def received(cell: Cell | None, output: int = 0) -> str:
    """What the gradient function received for `output` in this cell, or why it received nothing."""
    if cell is None:
        return ""
    if cell.result.upstream is None:
        return _NOT_RUN.get(cell.result.status, cell.status.replace("_", " "))
    return upstream_text(cell.result.upstream[output])


def upstream_values(report: CheckReport, spec: str = "ste") -> str:
    """Rows: scenarios; columns: each mechanism used as documented (Defuns and override map in a v1 Session,
    tf.custom_gradient in every context, merged where the contexts agree)."""
    by_key = cells(report, spec)
    header = ["scenario", *MECHANISMS.values()]
    rows = []
    for scenario in _scenarios(report, by_key):
        row = [f"`{scenario}`"]
        row += [received(by_key.get((scenario, f"{m}@v1_session"))) for m in list(MECHANISMS)[:3]]
        row.append(_merged({c: received(by_key.get((scenario, f"custom_gradient@{c}"))) for c in CONTEXTS}))
        rows.append(row)
    return markdown_table(header, rows)


def mechanism_contexts(report: CheckReport, mechanism: str, spec: str = "ste") -> str:
    """Rows: scenarios; columns: the five contexts; cells: the verdict against the reference (`same`, `other
    form` for the same values in another form, `differs`, `not called`, `unsupported`, `error`)."""
    by_key = cells(report, spec)
    header = ["scenario", *(CONTEXT_HEADERS[c] for c in CONTEXTS)]
    rows = [[f"`{s}`", *(verdict(by_key.get((s, f"{mechanism}@{c}"))) for c in CONTEXTS)]
            for s in _scenarios(report, by_key)]
    return markdown_table(header, rows)


def output_upstreams(report: CheckReport, scenario: str = "unused_output", spec: str = "multi_output_int") -> str:
    """Rows: every variant whose gradient function ran; columns: what it received for each output."""
    by_key = cells(report, spec)
    header = ["variant", "y0 = 2x (float, used)", "y1 = round(x) (int32, unused)", "y2 = x² (float, unused)"]
    rows = [[f"`{variant}`", *(_kind(cell.result.upstream[i]) for i in range(3))]
            for variant in report.variants if (cell := by_key.get((scenario, variant))) and cell.result.upstream]
    return markdown_table(header, rows)


def _kind(upstream: Upstream) -> str:
    if upstream.kind == "none":
        return "None"
    dense = upstream.to_dense()
    word = "zeros" if dense is not None and not np.any(dense) else "values"
    return f"{word} ({upstream.dtype})"


def verdict(cell: Cell | None) -> str:
    if cell is None:
        return ""
    if cell.status == "differs" and representation_only(cell):
        return "other form"
    return cell.status.replace("_", " ")


def _merged(texts: dict[str, str]) -> str:
    """One text if every context agrees, else `text (contexts)` groups."""
    groups: dict[str, list[str]] = {}
    for context, text in texts.items():
        groups.setdefault(text, []).append(context)
    if len(groups) == 1:
        return next(iter(groups))
    return "; ".join(f"{text} ({', '.join(ctx)})" for text, ctx in groups.items())


def _scenarios(report: CheckReport, by_key: dict[tuple[str, str], Cell]) -> list[str]:
    present = {scenario for scenario, _ in by_key}
    return [s for s in report.scenarios if s in present]


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    too_wide = [line for line in lines if len(line) > MAX_WIDTH]
    if too_wide:
        raise ValueError(f"a guide table line is {len(too_wide[0])} characters, over {MAX_WIDTH}: {too_wide[0]!r}; "
                         "shorten the headers or split the table")
    return "\n".join(lines)
