"""The release matrix as one self-contained HTML page: per spec, scenario × variant rows by release columns."""

from __future__ import annotations

import html
import json
from typing import Any

_STYLE = """body{font-family:sans-serif;margin:1em}table{border-collapse:collapse;margin:.5em 0 1.5em}
td,th{border:1px solid #ccc;padding:2px 6px;font-size:13px}th{background:#eee}
.same{background:#e6f4e6}.differs{background:#fde2c8}.not_called{background:#eee}.unsupported{background:#ddd}
.error{background:#f8c8c8}tr.changed td{outline:2px solid #d00}.native{font-weight:bold}
body.only-changed tr.row:not(.changed){display:none}"""
_SCRIPT = ("document.getElementById('only').onchange=function(e){"
           "document.body.classList.toggle('only-changed',e.target.checked)};")


def render(matrix: dict[str, Any]) -> str:
    ran = [r["release"] for r in matrix["releases"] if r["status"] == "ran"]
    summary = matrix["summary"]
    parts = ["<!DOCTYPE html><html><head><meta charset='utf-8'><title>compat-check across TensorFlow releases"
             f"</title><style>{_STYLE}</style></head><body>",
             "<h1>compat-check across TensorFlow releases</h1><table><tr><th>release</th><th>TensorFlow</th>"
             "<th>result</th></tr>"]
    for release in matrix["releases"]:
        result = release["verdict"] if release["status"] == "ran" else f"skipped: {release['reason']}"
        parts.append(f"<tr><td>{_e(release['release'])}</td><td>{_e(release['tensorflow'] or '')}</td>"
                     f"<td>{_e(result)}</td></tr>")
    aspects = ", ".join(f"{a} {n}" for a, n in summary["changed_by_aspect"].items()) or "none"
    parts += ["</table>", f"<p><b>{summary['changed']} of {summary['rows']} cells change between "
              f"{_e(', '.join(ran))}</b> ({_e(aspects)}); they are outlined in red. Hover a cell for its upstream "
              "and input gradients.</p>",
              "<label><input type='checkbox' id='only'> show only cells that change</label>"]
    for spec in matrix["specs"]:
        rows = [row for row in matrix["rows"] if row["spec"] == spec]
        changed = sum(row["changed"] for row in rows)
        parts.append(f"<h2>{_e(spec)} <small>({changed} changed)</small></h2><table><tr><th>scenario</th>"
                     "<th>dtype</th><th>variant</th>" + "".join(f"<th>{_e(r)}</th>" for r in ran) + "</tr>")
        for row in rows:
            what = ", ".join(c["aspect"] for c in row["changes"])
            parts.append(f"<tr class='row{' changed' if row['changed'] else ''}' title='{_e(what)}'>"
                         f"<td>{_e(row['scenario'])}</td><td>{_e(row['dtype'])}</td>"
                         f"<td class='{'native' if row['native'] else ''}'>{_e(row['variant'])}</td>"
                         + "".join(_cell(row["cells"].get(r)) for r in ran) + "</tr>")
        parts.append("</table>")
    parts.append(f"<script>{_SCRIPT}</script></body></html>")
    return "\n".join(parts) + "\n"


def _cell(cell: dict[str, Any] | None) -> str:
    if cell is None:
        return "<td>absent</td>"
    detail = json.dumps({"upstream": cell["upstream"], "input_grads": cell["input_grads"], "kinds": cell["kinds"],
                         "message": cell["message"]}, separators=(",", ":"))
    return f"<td class='{_e(cell['status'])}' title='{_e(detail)}'>{_e(cell['status'].replace('_', ' '))}</td>"


def _e(text: Any) -> str:
    return html.escape(str(text), quote=True)
