"""The whole run's report from its shards' JSON documents, rendered as compat-check renders the report."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any


def merged_report(paths: Sequence[str]) -> dict[str, Any]:
    """The whole run's JSON document from its shards' files (or one whole report); ValueError naming the file."""
    from compat.releases import join_shards, load_report

    if not paths:
        raise ValueError("give the JSON reports of every shard of one run (each shard K/N of a compat-check run)")
    joined = join_shards([(path, load_report(path)) for path in paths])
    if len(joined) != 1:
        names = ", ".join(str(path) for path, _ in joined)
        raise ValueError(f"these are {len(joined)} runs, not the shards of one ({names}): merge one run's shards, "
                         "or several releases with `python -m compat.releases`")
    document = dict(joined[0][1])
    document.pop("release", None)  # added when loading (from the file name); compat-check never writes it
    return document


def render_document(document: dict[str, Any], fmt: str, summary: bool) -> str:
    """`document` in format `fmt`, as compat-check renders the report it came from."""
    if fmt == "json":
        return json.dumps(document, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    from compat.reports import render
    from compat.reports.json_report import DEFAULT_MAX_ARRAY_ELEMENTS
    from compat.reports.load import report_from_dict
    from compat.reports.view import View

    limit = (document.get("run") or {}).get("flags", {}).get("max_array_elements")
    report = report_from_dict(document)
    return render(report, fmt, max_array_elements=DEFAULT_MAX_ARRAY_ELEMENTS if limit is None else limit,
                  view=View(summary=summary))
