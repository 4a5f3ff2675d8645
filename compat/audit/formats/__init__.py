"""Output formats for audit reports, registered by name: text, json, sarif, markdown."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from types import MappingProxyType

from compat.audit.engine import AuditReport
from compat.audit.formats import json_format, markdown, sarif, text


@dataclasses.dataclass(frozen=True)
class RenderOptions:
    """How to render. `base_dir` makes SARIF URIs relative; `suggestions` adds them to text output."""

    base_dir: str = "."
    suggestions: bool = False


Renderer = Callable[[AuditReport, RenderOptions], str]

FORMATS: Mapping[str, Renderer] = MappingProxyType({
    "text": text.render,
    "json": json_format.render,
    "sarif": sarif.render,
    "markdown": markdown.render,
})


def render(report: AuditReport, fmt: str = "text", options: RenderOptions | None = None) -> str:
    """Render `report` in format `fmt` (one of `FORMATS`)."""
    try:
        renderer = FORMATS[fmt]
    except KeyError:
        raise ValueError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}") from None
    return renderer(report, options or RenderOptions())


__all__ = ["FORMATS", "RenderOptions", "render"]
