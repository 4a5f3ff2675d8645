"""Renderers for `compat-check` reports, registered by name: table, json, markdown, html."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING

from compat.reports import html, json_report, markdown, table

if TYPE_CHECKING:
    from compat.matrix import CheckReport

Renderer = Callable[["CheckReport"], str]

RENDERERS: Mapping[str, Renderer] = MappingProxyType({
    "table": table.render,
    "json": json_report.render,
    "markdown": markdown.render,
    "html": html.render,
})
"""Format name -> function rendering a whole CheckReport as text (the CLI's `--format` choices)."""


def render(report: CheckReport, fmt: str = "table") -> str:
    """Render `report` in format `fmt`, one of `RENDERERS`.

    Raises:
      ValueError: `fmt` is not a registered format; the message lists the valid ones.
    """
    try:
        renderer = RENDERERS[fmt]
    except KeyError:
        raise ValueError(f"unknown report format {fmt!r}; choose one of {', '.join(RENDERERS)}") from None
    return renderer(report)


__all__ = ["RENDERERS", "Renderer", "render"]
