"""The release matrix as markdown: releases (ran or skipped), a summary of what changed, the changed cells."""

from __future__ import annotations

import json
from typing import Any

_WORDS = {"same": "same", "differs": "differs", "not_called": "not called", "unsupported": "unsupported",
          "error": "error"}


def render(matrix: dict[str, Any]) -> str:
    ran = [r["release"] for r in matrix["releases"] if r["status"] == "ran"]
    summary = matrix["summary"]
    lines = ["# compat-check across TensorFlow releases", "", "| release | TensorFlow | result |", "|---|---|---|"]
    for release in matrix["releases"]:
        result = release["verdict"] if release["status"] == "ran" else f"**skipped**: {_inline(release['reason'])}"
        lines.append(f"| {release['release']} | {release['tensorflow'] or ''} | {_inline(result)} |")
    lines += ["", "## What changed between releases", ""]
    if len(ran) < 2:
        lines.append(f"Nothing to compare: {len(ran)} release ran.")
    elif not summary["changed"]:
        lines.append(f"Nothing: all {summary['rows']} cells have the same status and values on {', '.join(ran)}.")
    else:
        aspects = ", ".join(f"{aspect} {n}" for aspect, n in summary["changed_by_aspect"].items())
        lines.append(f"{summary['changed']} of {summary['rows']} cells change ({aspects}), in "
                     f"{', '.join(f'`{s}`' for s in summary['changed_specs'])}.")
        lines += ["", "| spec | scenario | dtype | variant | what | " + " | ".join(ran) + " |",
                  "|" + "---|" * (5 + len(ran))]
        for row in matrix["rows"]:
            if row["changed"]:
                what = ", ".join(c["aspect"] for c in row["changes"])
                cells = [_cell(row["cells"].get(r)) for r in ran]
                lines.append(f"| `{row['spec']}` | `{row['scenario']}` | {row['dtype']} | `{row['variant']}` | "
                             f"{what} | " + " | ".join(cells) + " |")
    lines += ["", "Every cell, with values: `matrix.html` (changed cells highlighted) and `matrix.json`."]
    return "\n".join(lines) + "\n"


def _cell(cell: dict[str, Any] | None) -> str:
    if cell is None:
        return "absent"
    text = _WORDS.get(cell["status"], cell["status"])
    if cell["upstream"]:
        text += " " + _inline(_short(cell["upstream"][0].get("value")))
    return text


def _short(value: Any, limit: int = 40) -> str:
    text = json.dumps(value, separators=(",", ":"))
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _inline(text: str) -> str:
    return text.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;").replace("\n", " ")
