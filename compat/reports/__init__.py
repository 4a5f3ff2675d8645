"""Renderers for `compat-check` reports, registered by name: table, json, markdown, html."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Protocol

from compat.reports import html, json_report, markdown, table
from compat.reports.view import FULL, View

if TYPE_CHECKING:
    from compat.checker import CheckReport

class Renderer(Protocol):
    """`render(report, max_array_elements, view)`: the report as text; arrays with more elements than
    `max_array_elements` (0: no limit) are summarised where a format embeds arrays (JSON, HTML); `view` says
    how much the text formats show (JSON ignores it, HTML starts with its filters set from it)."""

    def __call__(self, report: CheckReport, max_array_elements: int = ..., view: View = ...) -> str: ...

RENDERERS: Mapping[str, Renderer] = MappingProxyType({
    "table": table.render,
    "json": json_report.render,
    "markdown": markdown.render,
    "html": html.render,
})
"""Format name -> function rendering a whole CheckReport as text (the CLI's `--format` choices)."""


def render(report: CheckReport, fmt: str = "table",
           max_array_elements: int = json_report.DEFAULT_MAX_ARRAY_ELEMENTS, view: View = FULL) -> str:
    """Render `report` in format `fmt`, one of `RENDERERS`; JSON and HTML embed arrays of at most
    `max_array_elements` elements (0: every array) and summarise larger ones.

    Raises:
      ValueError: `fmt` is not a registered format; the message lists the valid ones.
    """
    try:
        renderer = RENDERERS[fmt]
    except KeyError:
        raise ValueError(f"unknown report format {fmt!r}; choose one of {', '.join(RENDERERS)}") from None
    return renderer(report, max_array_elements=max_array_elements, view=view)


__all__ = ["RENDERERS", "Renderer", "View", "render"]
