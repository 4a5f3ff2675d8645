"""What the custom gradient changes against the forward itself: the references' part of the text reports."""

from __future__ import annotations

import dataclasses
import textwrap
from collections import defaultdict
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from compat.checker import Cell, CheckReport
    from compat.references.base import ForwardCheck

TITLE = ("The custom gradient against the forward itself (autodiff: TensorFlow's own gradient of the forward; "
         "finite_difference: float64 central differences), in the reference variant's cells (reported, not failing):")
WORDS: dict[str, str] = {"same": "same", "differs": "differs", "not_differentiable": "not differentiable",
                         "not_applicable": "n/a", "not_compared": "no gradient computed", "error": "reference failed"}
ORDER = tuple(WORDS)
LINE_WIDTH = 120  # the table report's width


@dataclasses.dataclass(frozen=True)
class Scene:
    """One spec, dtype and scenario: the representative cell's checks, and the variants whose check against a
    reference reads otherwise (e.g. `override_map` ignored eagerly: TensorFlow's own gradient, `same`)."""

    spec: str
    dtype: str
    scenario: str
    cell: Cell
    others: dict[str, dict[str, list[str]]]
    """reference -> status -> the variants with that status, where it is not the representative cell's."""


def representative(cells: Sequence[Cell]) -> Cell:
    """The cell of the report's reference variant, else the first native cell that computed a gradient."""
    for cell in cells:
        if cell.variant == cell.reference:
            return cell
    computed = [c for c in cells if c.native and any(f.status != "not_compared" for f in c.forward)]
    return computed[0] if computed else cells[0]


def scenes(report: CheckReport) -> list[Scene]:
    grouped: dict[tuple[str, str, str], list[Cell]] = defaultdict(list)
    for cell in report.cells:
        if cell.forward:
            grouped[cell.spec, cell.dtype, cell.scenario].append(cell)
    found = []
    for (spec, dtype, scenario), cells in grouped.items():
        chosen = representative(cells)
        mine = {checked.reference: checked.status for checked in chosen.forward}
        others: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
        for cell in cells:
            for checked in cell.forward:
                if checked.status not in (mine.get(checked.reference), "not_compared"):
                    others[checked.reference][checked.status].append(cell.variant)
        found.append(Scene(spec, dtype, scenario, chosen, {k: dict(v) for k, v in others.items()}))
    return found


def word(checked: ForwardCheck) -> str:
    text = WORDS[checked.status]
    return f"{text} ({checked.reason})" if checked.reason and checked.status == "not_differentiable" else text


def spec_sentence(scenes_of_spec: Sequence[Scene]) -> str:
    """`autodiff: differs in 14 (sum, scaled, weighted, ...), same in second_order; finite_difference: ...`."""
    parts = []
    references = list(dict.fromkeys(c.reference for scene in scenes_of_spec for c in scene.cell.forward))
    for reference in references:
        groups: dict[str, list[str]] = {}
        for scene in scenes_of_spec:
            for checked in scene.cell.forward:
                if checked.reference == reference:
                    groups.setdefault(word(checked), []).append(scene.scenario)
        parts.append(f"{reference}: " + ", ".join(f"{w} in {few(names)}" for w, names in groups.items()))
    return "; ".join(parts)


def few(names: Sequence[str], shown: int = 3) -> str:
    if len(names) <= shown:
        return ", ".join(names)
    return f"{len(names)} ({', '.join(names[:shown])}, ...)"


def by_spec(report: CheckReport) -> dict[str, list[Scene]]:
    """The first dtype's scenes of each spec, in report order."""
    dtype = report.dtypes[0] if report.dtypes else ""
    grouped: dict[str, list[Scene]] = defaultdict(list)
    for scene in scenes(report):
        if scene.dtype == dtype:
            grouped[scene.spec].append(scene)
    return grouped


def summary_lines(report: CheckReport) -> list[str]:
    """One line per group of specs that read the same (the one-screen summary's section)."""
    entries: dict[str, list[str]] = {}
    for spec, spec_scenes in by_spec(report).items():
        entries.setdefault(spec_sentence(spec_scenes), []).append(spec)
    lines = []
    for sentence, specs in entries.items():
        names = ", ".join(specs[:4]) + (f" and {len(specs) - 4} more" if len(specs) > 4 else "")
        lines.append(f"  {names}: {sentence}")
    return lines


def text_section(report: CheckReport) -> list[str]:
    """Every spec, dtype and scenario: the reference cell's check against each reference, with what differs most
    and the variants that read otherwise (the --details report)."""
    if not report.references:
        return []
    lines = _wrapped(TITLE, 0)
    # A failure is quoted once in a report: the cells' errors are, elsewhere; each reference's own, here.
    failures = {_failure(c.result.message) for c in report.cells if c.result.status == "error" and c.result.message}
    for scene in scenes(report):
        lines += _wrapped(f"{scene.spec} · {scene.dtype} · {scene.scenario} ({scene.cell.variant}):", 2)
        for checked in scene.cell.forward:
            detail = f": {checked.detail}" if checked.detail else ""
            if checked.status == "error" and detail:
                failure = _failure(checked.detail)
                detail = ": the same failure as quoted for the cells or above" if failure in failures else detail
                failures.add(failure)
            lines += _wrapped(f"{checked.reference}: {word(checked)}{detail}", 4)
            for status, variants in scene.others.get(checked.reference, {}).items():
                lines += _wrapped(f"{WORDS[status]} in {len(variants)} other variant{'s' * (len(variants) != 1)}: "
                                  f"{', '.join(variants[:4])}{', ...' if len(variants) > 4 else ''}", 6)
    return lines


def _failure(message: str) -> str:
    """A failure message without its `spec ..., variant/reference ...: ` prefix, to tell equal failures."""
    return message.split("`: ", 1)[-1]


def _wrapped(text: str, indent: int) -> list[str]:
    """`text` in lines of at most LINE_WIDTH columns, indented, continuation lines 4 more."""
    return textwrap.wrap(text, width=LINE_WIDTH, initial_indent=" " * indent, subsequent_indent=" " * (indent + 4),
                         break_long_words=False, break_on_hyphens=False) or [""]


def markdown_section(report: CheckReport) -> list[str]:
    """A spec · dtype · scenario by reference table of the reference cell's checks (the markdown report)."""
    if not report.references:
        return []
    lines = ["## The custom gradient against the forward itself", "",
             "`autodiff`: TensorFlow's own gradient of the forward, no custom gradient; `finite_difference`: float64 "
             "central differences along seeded directions. Reported, never failing: the difference is what the custom "
             "gradient changes.", "",
             "| spec | dtype | scenario | " + " | ".join(f"`{name}`" for name in report.references) + " |",
             "|---|---|---|" + "---|" * len(report.references)]
    for scene in scenes(report):
        checks = {checked.reference: checked for checked in scene.cell.forward}
        row = [_markdown_word(checks.get(name)) for name in report.references]
        lines.append(f"| `{scene.spec}` | {scene.dtype} | {scene.scenario} | " + " | ".join(row) + " |")
    return lines


def _markdown_word(checked: ForwardCheck | None) -> str:
    if checked is None:
        return ""
    text = word(checked)
    if checked.status == "differs" and checked.max_abs is not None:
        text += f" (max abs {checked.max_abs:.3g} at {checked.where})"
    return text.replace("|", "\\|")
