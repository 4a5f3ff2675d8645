"""What each gradient function received: per spec, dtype and scenario, the distinct upstreams and who got them.

Shared by the table and markdown reports (`--show=upstream` prints only this). Variants whose first call
received equal upstreams (same kind, dtype, static shape, values within the dtype's tolerance) are one group;
variants that never ran the function are listed by their status, never with invented values.
"""

from __future__ import annotations

import dataclasses
import textwrap
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

import numpy as np

from compat.comparison import Location, compare_arrays

if TYPE_CHECKING:
    from compat.checker import Cell, CheckReport
    from compat.results import Upstream

VALUE_THRESHOLD = 8
"""Arrays with more elements are summarised the way numpy prints them (`[1. 1. 1. ... 1. 1. 1.]`)."""

NOT_RUN_WORDS: dict[str, str] = {
    "not_called": "never called (not_called)",
    "unsupported": "unsupported (TensorFlow refuses this combination)",
    "error": "error",
    "not_observable": "not observable here (gradcompat cannot capture the upstream in this context)",
}


@dataclasses.dataclass(frozen=True)
class Received:
    """Variants whose gradient function received the same upstreams in its first call."""

    upstreams: tuple[Upstream, ...]
    variants: tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class Scene:
    """One spec, dtype and scenario: the distinct upstreams received, and the variants that never ran it."""

    spec: str
    dtype: str
    scenario: str
    received: tuple[Received, ...]
    not_run: dict[str, tuple[str, ...]]
    """Status (not_called, unsupported, error) -> variants."""
    differs: bool
    """Whether any of its cells differs from its reference (what `--only_differences` keeps)."""


def scenes(report: CheckReport) -> list[Scene]:
    """Every spec × dtype × scenario of `report` that has cells, in report order."""
    found = []
    for spec in report.specs:
        for dtype in report.dtypes:
            for scenario in report.scenarios:
                cells = [c for c in report.cells if (c.spec, c.dtype, c.scenario) == (spec, dtype, scenario)]
                if cells:
                    found.append(_scene(spec, dtype, scenario, cells))
    return found


def _scene(spec: str, dtype: str, scenario: str, cells: Sequence[Cell]) -> Scene:
    groups: list[tuple[tuple[Upstream, ...], list[str]]] = []
    not_run: dict[str, list[str]] = {}
    for cell in cells:
        upstreams = cell.result.upstream
        if cell.result.status in ("ok", "not_called") and upstreams is None:
            not_run.setdefault("not_called", []).append(cell.variant)
        elif upstreams is None:
            not_run.setdefault(cell.result.status, []).append(cell.variant)
        else:
            for first, variants in groups:
                if same_upstreams(first, upstreams):
                    variants.append(cell.variant)
                    break
            else:
                groups.append((upstreams, [cell.variant]))
    groups.sort(key=lambda group: -len(group[1]))
    return Scene(spec, dtype, scenario, tuple(Received(u, tuple(v)) for u, v in groups),
                 {status: tuple(variants) for status, variants in not_run.items()},
                 any(cell.differences for cell in cells))


def same_upstreams(a: Sequence[Upstream], b: Sequence[Upstream]) -> bool:
    return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))


def _same(a: Upstream, b: Upstream) -> bool:
    if (a.kind, a.dtype, a.static_shape, a.dense_shape) != (b.kind, b.dtype, b.static_shape, b.dense_shape):
        return False
    if not _close(a.value, b.value):
        return False
    return a.indices is None and b.indices is None or (
        a.indices is not None and b.indices is not None and np.array_equal(a.indices, b.indices))


def _close(a: np.ndarray | None, b: np.ndarray | None) -> bool:
    """Same shape, dtype and values within the dtype's tolerance (or both None), as the comparison library decides."""
    return not compare_arrays(Location("upstream"), a, b)


def describe(upstream: Upstream) -> str:
    """`Tensor float32, static shape [4, 3]: [[1. 1. 1.] ...]`; values printed by numpy, large ones summarised."""
    if upstream.kind == "none":
        return "None"
    shape = "<unknown rank>" if upstream.static_shape is None else _shape(upstream.static_shape)
    kind = "Tensor" if upstream.kind == "dense" else "IndexedSlices"
    text = f"{kind} {upstream.dtype}, static shape {shape}"
    if upstream.kind == "indexed_slices":
        dense = "unknown" if upstream.dense_shape is None else _shape(upstream.dense_shape)
        text += f", dense_shape {dense}, indices {array_text(upstream.indices)}"
    if upstream.value is not None:
        text += f": {'values ' if upstream.kind == 'indexed_slices' else ''}{array_text(upstream.value)}"
    return text


def array_text(value: np.ndarray | None) -> str:
    """numpy's own printing on one line: `[3. 3. 3.]`; above VALUE_THRESHOLD elements, summarised with `...`."""
    if value is None:
        return "None"
    return " ".join(_numpy_text(value).split())


def _numpy_text(value: np.ndarray, max_line_width: int = 75) -> str:
    """np.array2string, summarised above VALUE_THRESHOLD elements with fewer edge items the higher the rank."""
    array = _printable(value)
    edges = {0: 3, 1: 3, 2: 2}.get(array.ndim, 1)
    return np.array2string(array, threshold=VALUE_THRESHOLD, edgeitems=edges, precision=4,
                           max_line_width=max_line_width)


def _printable(value: np.ndarray) -> np.ndarray:
    array = np.asarray(value)
    if array.dtype.kind == "V" or array.dtype.name == "bfloat16":
        return array.astype(np.float32)  # bfloat16 prints like float32
    return array


def _shape(shape: Sequence[int | None]) -> str:
    return "[" + ", ".join("?" if d is None else str(d) for d in shape) + "]"


def compact_variants(variants: Sequence[str], all_variants: Sequence[str]) -> str:
    """`custom_gradient@* (5), override_map@{v1_session,function_gradients}`: every context of a mechanism
    that the report ran collapses to `@*`."""
    by_mechanism: dict[str, list[str]] = {}
    for variant in variants:
        mechanism, _, context = variant.partition("@")
        by_mechanism.setdefault(mechanism, []).append(context)
    parts = []
    for mechanism, contexts in by_mechanism.items():
        every = [v.partition("@")[2] for v in all_variants if v.partition("@")[0] == mechanism]
        if len(contexts) == len(every) and len(every) > 1:
            parts.append(f"{mechanism}@* ({len(every)})")
        elif len(contexts) == 1:
            parts.append(f"{mechanism}@{contexts[0]}")
        else:
            # a long group gets spaces, so a line can break inside it and stay within the table's width
            separator = ", " if len(contexts) > 5 else ","
            parts.append(f"{mechanism}@{{{separator.join(contexts)}}}")
    return ", ".join(parts)


TITLE = "What your gradient function received"
INTRO = ("first call's upstream gradients, one per forward output; variants that received equal ones "
         "(kind, dtype, static shape, values within tolerance) share a line")


def text_section(report: CheckReport, only_differences: bool = False) -> list[str]:
    """The section as terminal text (table format)."""
    lines = [f"{TITLE}:", *_indented(f"({INTRO})", 2)]
    for scene, first in _shown(report, only_differences):
        if first:
            description = report.descriptions.get(scene.spec)
            lines += ["", f"{scene.spec} · {scene.dtype}" + (f": {description}" if description else "")]
        about = report.scenario_descriptions.get(scene.scenario)
        lines.append(_clip(f"  {scene.scenario}" + (f" ({about})" if about else "")))
        for group in scene.received:
            if len(group.upstreams) == 1:
                lines += _upstream_lines("received ", group.upstreams[0], 4)
            else:
                lines.append("    received")
                for index, upstream in enumerate(group.upstreams):
                    lines += _upstream_lines(f"upstream[{index}] ", upstream, 8)
            lines += _indented("by " + compact_variants(group.variants, report.variants), 6)
        for status, variants in scene.not_run.items():
            lines += _indented(f"{NOT_RUN_WORDS.get(status, status)}: {compact_variants(variants, report.variants)}",
                               4)
    if len(lines) == 2:
        lines.append("  nothing to show: every variant agrees with its reference" if only_differences else "  no cells")
    return lines


def markdown_section(report: CheckReport, only_differences: bool = False) -> list[str]:
    """The section as markdown: one heading per spec and dtype, one table per scenario."""
    lines = [f"## {TITLE}", "", f"The {INTRO}."]
    for scene, first in _shown(report, only_differences):
        if first:
            description = report.descriptions.get(scene.spec)
            lines += ["", f"### `{scene.spec}` · {scene.dtype}"] + (["", _md(description)] if description else [])
        about = report.scenario_descriptions.get(scene.scenario)
        lines += ["", f"**`{scene.scenario}`**" + (f": {_md(about)}" if about else ""), "",
                  "| received | by |", "|---|---|"]
        lines += [f"| {'<br>'.join(_md(part) for part in _what(group))} | "
                  f"{_md(compact_variants(group.variants, report.variants))} |"
                  for group in scene.received]
        lines += [f"| {_md(NOT_RUN_WORDS.get(status, status))} | {_md(compact_variants(variants, report.variants))} |"
                  for status, variants in scene.not_run.items()]
    return lines


def _shown(report: CheckReport, only_differences: bool) -> Iterator[tuple[Scene, bool]]:
    """The scenes to show, each with whether it starts a new spec and dtype."""
    current = None
    for scene in scenes(report):
        if only_differences and not scene.differs:
            continue
        yield scene, (scene.spec, scene.dtype) != current
        current = scene.spec, scene.dtype


def _upstream_lines(prefix: str, upstream: Upstream, indent: int) -> list[str]:
    """One line if it fits in 120 columns; else the description, then the value as numpy prints it."""
    line = " " * indent + prefix + describe(upstream)
    if len(line) <= 120 or upstream.value is None:
        return [line]
    head = " " * indent + prefix + describe(dataclasses.replace(upstream, value=None))
    text = _numpy_text(upstream.value, max_line_width=110 - indent)
    return [head + ":", *(" " * (indent + 2) + row for row in text.splitlines())]


def _what(group: Received) -> list[str]:
    if len(group.upstreams) == 1:
        return [describe(group.upstreams[0])]
    return [f"upstream[{i}] {describe(u)}" for i, u in enumerate(group.upstreams)]


def _indented(text: str, indent: int) -> list[str]:
    return textwrap.wrap(text, width=120, initial_indent=" " * indent, subsequent_indent=" " * (indent + 4),
                         break_long_words=False, break_on_hyphens=False)


def _clip(text: str) -> str:
    return text if len(text) <= 120 else text[:117] + "..."


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;").replace("\n", " ")
