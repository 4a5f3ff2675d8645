"""HTML: one self-contained page with a colour-coded matrix and a details panel per cell (no external resources)."""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from compat.reports import forward
from compat.reports.json_report import DEFAULT_MAX_ARRAY_ELEMENTS, cell_dict, native_variants, verdict
from compat.reports.table import (
    INSTEAD,
    OTHER_FORM,
    REPRESENTATION_SYMBOL,
    REPRESENTATION_WORDS,
    SYMBOLS,
    WORDS,
    abbreviations,
    cell_symbol,
    cell_title,
    display_counts,
    pitfalls,
    representation_notes,
    representation_only,
    where,
)
from compat.reports.view import FULL, View

if TYPE_CHECKING:
    from compat.checker import Cell, CheckReport

_STYLE = """
:root { --same:#cdebd5; --same-fg:#1e6b3a; --differs:#ffd36e; --differs-fg:#6b4200; --unexpected:#e5484d;
  --not_called:#d8cde9; --not_called-fg:#4b3b63; --unsupported:#eeeeee; --unsupported-fg:#8a8a8a;
  --error:#7f1d1d; --native:#1d4ed8; --ink:#1f2328; --muted:#59636e; --line:#d0d7de; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--ink); margin: 0;
  background: #f6f8fa; }
header { padding: 16px 24px 8px; background: #fff; border-bottom: 1px solid var(--line); }
h1 { font-size: 20px; margin: 0 0 6px; } h2 { font-size: 16px; margin: 18px 0 8px; }
.meta { display: flex; flex-wrap: wrap; gap: 4px 24px; color: var(--muted); }
.meta b { color: var(--ink); font-weight: 600; }
code, pre, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 12.5px; }
.verdict { margin: 12px 24px; padding: 10px 16px; border-radius: 6px; font-weight: 600; font-size: 15px; }
.verdict.ok { background: #dafbe1; color: #116329; border: 1px solid #4ac26b; }
.verdict.fail { background: #ffebe9; color: #a40e26; border: 1px solid #ff8182; }
.counts { display: flex; flex-wrap: wrap; gap: 6px; margin: 8px 0 4px; }
.chip-group { display: inline-flex; flex-wrap: wrap; gap: 6px; align-items: center; margin-right: 14px; }
.chip { padding: 1px 8px; border-radius: 10px; font-size: 12.5px; border: 1px solid rgba(0,0,0,.08); }
.controls { display: flex; flex-wrap: wrap; align-items: center; gap: 8px 20px; margin: 0 24px 10px; }
.controls label { cursor: pointer; }
.legend { display: flex; flex-wrap: wrap; gap: 6px; align-items: center; }
.layout { display: flex; gap: 16px; align-items: flex-start; margin: 0 24px; }
/* min-width: 0 lets the matrix shrink and scroll inside its own box, beside the panel, never under it. */
.matrices { flex: 1 1 auto; min-width: 0; overflow-x: auto; }
table.matrix { border-collapse: separate; border-spacing: 0; background: #fff; border: 1px solid var(--line);
  border-radius: 6px; margin-bottom: 18px; }
.matrix th, .matrix td { padding: 0; text-align: center; }
.matrix thead th { font-weight: 600; font-size: 12px; padding: 4px 3px; border-bottom: 1px solid var(--line);
  background: #fff; position: sticky; top: 0; }
.matrix thead tr.ctx th { top: 25px; }
.matrix th.mech { font-family: ui-monospace, Menlo, Consolas, monospace; border-left: 3px solid #f6f8fa; }
.matrix th.ctx-h { font-weight: 500; color: var(--muted); min-width: 16px; padding: 4px 0; font-size: 10px; }
.matrix th.ctx-h.native { color: var(--native); font-weight: 700; box-shadow: inset 0 3px 0 var(--native); }
.matrix th.ctx-h.cross { font-style: italic; }
.matrix th.row-h { text-align: left; padding: 2px 10px; font-weight: 500; white-space: nowrap; }
.matrix tr.spec-row th { text-align: left; background: #eef1f4; padding: 5px 10px; font-size: 13px;
  white-space: normal;
  border-top: 1px solid var(--line); border-bottom: 1px solid var(--line); }
.matrix td.cell { height: 24px; min-width: 16px; cursor: pointer; font-weight: 600; font-size: 13px;
  border: 1px solid #fff; }
.matrix td.cell.group-start, .matrix th.group-start { border-left: 3px solid #f6f8fa; }
.matrix td.cell.native { outline: 1px solid rgba(29,78,216,.35); outline-offset: -3px; }
.matrix td.cell:hover { filter: brightness(.93); }
.matrix td.cell.selected { box-shadow: inset 0 0 0 3px var(--ink); }
.st-same { background: var(--same); color: var(--same-fg); }
.st-differs { background: var(--differs); color: var(--differs-fg); }
.st-differs.repr { background: #fdf3d6; color: #8a6d1e; }
.st-not_called { background: var(--not_called); color: var(--not_called-fg); }
.st-unsupported { background: var(--unsupported); color: var(--unsupported-fg); }
.st-not_observable { background: var(--unsupported); color: var(--unsupported-fg); font-style: italic; }
.st-error { background: var(--error); color: #fff; }
.unexpected, .st-differs.unexpected { background: var(--unexpected); color: #fff; }
.spec-row .desc { font-weight: 400; color: var(--muted); margin-left: 8px; }
aside#details { flex: 0 0 340px; position: sticky; top: 12px; max-height: calc(100vh - 24px); overflow: auto;
  background: #fff; border: 1px solid var(--line); border-radius: 6px; padding: 12px 14px; }
aside h3 { margin: 0 0 2px; font-size: 15px; word-break: break-all; }
aside .sub { color: var(--muted); margin-bottom: 8px; }
aside dl { display: grid; grid-template-columns: auto 1fr; gap: 2px 10px; margin: 6px 0; }
aside dt { color: var(--muted); } aside dd { margin: 0; }
aside pre { background: #f6f8fa; border: 1px solid var(--line); border-radius: 4px; padding: 6px 8px;
  white-space: pre-wrap; word-break: break-word; margin: 4px 0 8px; }
aside h4 { margin: 12px 0 4px; font-size: 13px; }
.diff { border-left: 3px solid var(--differs); padding: 2px 8px; margin: 6px 0; }
.diff.breaking { border-left-color: var(--unexpected); }
.badge { display: inline-block; padding: 0 7px; border-radius: 9px; font-size: 12px; margin-right: 4px; }
.notes { margin: 0 24px 24px; } .notes li { margin: 3px 0; }
.hint { color: var(--muted); }
.hidden { display: none !important; }
"""

_SCRIPT = """
const cells = JSON.parse(document.getElementById('cell-data').textContent);
const panel = document.getElementById('details');
const words = WORDS_JSON;
function el(tag, cls, text) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined && text !== null) node.textContent = text;
  return node;
}
function num(v) { return typeof v === 'number' ? String(+v.toPrecision(6)) : String(v); }
function fmt(v, indent) {
  indent = indent || '';
  if (v === null) return 'None';
  if (v.summary) return v.dtype + shape(v.shape) + ' (not embedded: ' + v.size + ' elements) min ' + num(v.min) +
    ' max ' + num(v.max) + ' mean ' + num(v.mean) + ' first ' + fmt(v.first) + ' sha256 ' + v.sha256.slice(0, 16);
  if (!Array.isArray(v)) return num(v);
  if (!v.some(Array.isArray)) return '[' + v.map(num).join(', ') + ']';
  return '[' + v.map(x => fmt(x, indent + ' ')).join(',\\n' + indent + ' ') + ']';
}
function shape(s) { return s === null ? '<unknown rank>' : '[' + s.map(d => d === null ? '?' : d).join(', ') + ']'; }
function upstreams(box, list, title) {
  box.appendChild(el('h4', '', title));
  if (list === null) { box.appendChild(el('div', 'hint', 'the gradient function never ran')); return; }
  list.forEach((u, i) => {
    let head = 'upstream[' + i + ']: ' + (u.kind === 'none' ? 'None' :
      (u.kind === 'dense' ? 'Tensor ' : 'IndexedSlices ') + u.dtype + ' static shape ' + shape(u.static_shape));
    if (u.dense_shape !== null) head += ', dense_shape ' + shape(u.dense_shape);
    box.appendChild(el('div', 'mono', head));
    if (u.value !== null) box.appendChild(el('pre', '', fmt(u.value)));
    if (u.indices !== null) box.appendChild(el('div', 'mono', 'indices ' + fmt(u.indices)));
  });
}
function show(i) {
  const c = cells[i];
  document.querySelectorAll('td.selected').forEach(td => td.classList.remove('selected'));
  document.querySelectorAll('td[data-i="' + i + '"]').forEach(td => td.classList.add('selected'));
  panel.replaceChildren();
  panel.appendChild(el('h3', '', c.variant));
  panel.appendChild(el('div', 'sub', c.spec + ' · ' + c.dtype + ' · scenario ' + c.scenario));
  const badges = el('div');
  const otherForm = c.status === 'differs' && c.differences.every(d => !d.breaking);
  const badgeClass = 'badge st-' + c.status + (c.unexpected ? ' unexpected' : '') + (otherForm ? ' repr' : '');
  badges.appendChild(el('span', badgeClass,
                        (otherForm ? REPR_WORDS : words[c.status]) + (c.unexpected ? ' · UNEXPECTED' : '')));
  badges.appendChild(el('span', 'badge ' + (c.native ? 'st-same' : 'st-unsupported'),
                        c.native ? 'native' : 'cross (migration pitfall if it differs)'));
  panel.appendChild(badges);
  const dl = el('dl');
  [['mechanism', c.mechanism], ['context', c.context], ['compared with', c.reference],
   ['calls', c.calls], ['traces', c.traces]].forEach(([k, v]) => {
    dl.appendChild(el('dt', '', k)); dl.appendChild(el('dd', 'mono', String(v)));
  });
  panel.appendChild(dl);
  if (c.message) { panel.appendChild(el('h4', '', 'message')); panel.appendChild(el('pre', '', c.message)); }
  panel.appendChild(el('h4', '', 'differences (' + c.differences.length + ')'));
  if (!c.differences.length) panel.appendChild(el('div', 'hint', 'none'));
  c.differences.forEach(d => {
    const box = el('div', 'diff' + (d.breaking ? ' breaking' : ''));
    box.appendChild(el('div', 'mono', '[' + d.kind + '] ' + (d.breaking ? '' : '(representation only) ')));
    const instead = c.status === 'not_called' && d.where.startsWith('input_grad') ? ' (' + INSTEAD + ')' : '';
    box.appendChild(el('div', '', d.detail + instead));
    const extra = [];
    if ('max_abs' in d) extra.push('max abs ' + num(d.max_abs));
    if ('max_rel' in d) extra.push('max rel ' + num(d.max_rel));
    if ('index' in d) extra.push('first at [' + d.index.join(', ') + ']');
    if (extra.length) box.appendChild(el('div', 'hint mono', extra.join(' · ')));
    panel.appendChild(box);
  });
  if (c.forward && c.forward.length) {
    panel.appendChild(el('h4', '', 'against the forward itself (reported, not failing)'));
    c.forward.forEach(f => panel.appendChild(el('div', 'mono', f.reference + ': ' + f.status.replace(/_/g, ' ')
      + (f.detail ? ' · ' + f.detail : ''))));
  }
  upstreams(panel, c.upstream, 'upstream received (first call)');
  if (c.ref !== null && c.ref !== i) upstreams(panel, cells[c.ref].upstream, 'reference ' + c.reference + ' received');
  const inputTitle = 'input gradients' + (c.status === 'not_called' ? ' (' + INSTEAD + ')' : '');
  panel.appendChild(el('h4', '', inputTitle));
  if (c.input_grads === null) panel.appendChild(el('div', 'hint', 'none computed'));
  else c.input_grads.forEach((g, k) => panel.appendChild(el('pre', '', 'input_grad[' + k + '] = ' + fmt(g))));
}
document.querySelectorAll('td.cell').forEach(td => td.addEventListener('click', () => show(+td.dataset.i)));
const dtypeSelect = document.getElementById('dtype');
const onlyDiff = document.getElementById('only-diff');
const onlyNative = document.getElementById('only-native');
function apply() {
  document.querySelectorAll('section.dtype').forEach(s => s.classList.toggle('hidden',
    dtypeSelect.value !== '*' && s.dataset.dtype !== dtypeSelect.value));
  document.querySelectorAll('.cross').forEach(n => n.classList.toggle('hidden', onlyNative.checked));
  document.querySelectorAll('th.mech').forEach(th => {
    const span = onlyNative.checked ? +th.dataset.native : +th.dataset.all;
    th.colSpan = Math.max(span, 1); th.classList.toggle('hidden', span === 0);
  });
  const key = onlyNative.checked ? 'quietNative' : 'quiet';
  document.querySelectorAll('tr.scen').forEach(tr => tr.classList.toggle('hidden',
    onlyDiff.checked && tr.dataset[key] === '1'));
}
[dtypeSelect, onlyDiff, onlyNative].forEach(n => n.addEventListener('change', apply));
apply();
const first = document.querySelector('td.cell.unexpected') || document.querySelector('td.cell.st-differs');
if (first) show(+first.dataset.i);
"""

_CLASSES: dict[str, str] = {status: f"st-{status}" for status in SYMBOLS}
"""Status -> CSS class; every cell element carries exactly one."""
_COUNT_CLASSES: dict[str, str] = {**{WORDS[status]: css for status, css in _CLASSES.items()},
                                  OTHER_FORM: "st-differs repr"}
"""Label of a header count (`display_counts`) -> its chip's CSS class."""


def render(report: CheckReport, max_array_elements: int = DEFAULT_MAX_ARRAY_ELEMENTS, view: View = FULL) -> str:
    """The page; `view.only_differences` starts with "only rows with differences" ticked."""
    index = {id(cell): i for i, cell in enumerate(report.cells)}
    by_key = {(c.spec, c.dtype, c.scenario, c.variant): i for i, c in enumerate(report.cells)}
    data = [dict(cell_dict(c, max_array_elements), ref=by_key.get((c.spec, c.dtype, c.scenario, c.reference)))
            for c in report.cells]
    passed = not report.unexpected
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>compat-check · TensorFlow {_e(report.tensorflow)}</title>",
        f"<style>{_STYLE}</style></head><body>",
        _header(report),
        f'<div class="verdict {"ok" if passed else "fail"}">{_e(verdict(report))}</div>',
        _controls(report, view.only_differences),
        '<div class="layout"><div class="matrices">',
        *(_dtype_section(report, dtype, index) for dtype in report.dtypes),
        '</div><aside id="details"><h3>Details</h3>',
        '<p class="hint">Click a cell to see what its gradient function received, its input gradients and '
        "every difference from the reference. Hover for a summary.</p></aside></div>",
        _notes(report),
        f'<script type="application/json" id="cell-data">{_script_json(data)}</script>',
        f"<script>{_script()}</script>",
        "</body></html>",
    ]
    return "\n".join(parts) + "\n"


def _script() -> str:
    """The page's script with the report's words filled in (placeholders in capitals)."""
    script = _SCRIPT
    for placeholder, value in (("WORDS_JSON", WORDS), ("REPR_WORDS", REPRESENTATION_WORDS), ("INSTEAD", INSTEAD)):
        script = script.replace(placeholder, _script_json(value))
    return script


def _header(report: CheckReport) -> str:
    tolerances = ", ".join(f"{_e(d)} rtol={t['rtol']:g} atol={t['atol']:g}"
                           for d, t in report.tolerances.items() if d in report.dtypes)
    native = sum(cell.native for cell in report.cells)
    chips = "".join(
        f'<span class="chip-group"><span class="hint">{side}</span> '
        + "".join(f'<span class="chip {_COUNT_CLASSES[label]}">{_e(label)}: {n}</span>'
                  for label, n in display_counts(c for c in report.cells if c.native == native_side).items())
        + "</span>" for side, native_side in (("native", True), ("cross", False)))
    if report.unexpected:
        chips += f'<span class="chip unexpected">unexpected: {len(report.unexpected)}</span>'
    return (
        "<header><h1>gradcompat · compat-check</h1><div class=\"meta\">"
        f"<span>TensorFlow <b>{_e(report.tensorflow)}</b></span>"
        f"<span>reference <b class=\"mono\">{_e(report.reference)}</b></span>"
        f"<span>tolerances <b>{tolerances}</b></span>"
        f"<span><b>{len(report.cells)}</b> cells ({native} native, {len(report.cells) - native} cross)</span>"
        f"<span><b>{len(report.specs)}</b> specs × <b>{len(report.dtypes)}</b> dtypes × "
        f"<b>{len(report.scenarios)}</b> scenarios × <b>{len(report.variants)}</b> variants</span>"
        f'</div><div class="counts">{chips}</div></header>'
    )


def _controls(report: CheckReport, only_differences: bool = False) -> str:
    options = "".join(f'<option value="{_e(d)}">{_e(d)}</option>' for d in report.dtypes)
    if len(report.dtypes) > 1:
        options += '<option value="*">all dtypes</option>'
    legend = "".join(f'<span class="chip {_CLASSES[s]}">{SYMBOLS[s]} {_e(WORDS[s])}</span>' for s in SYMBOLS)
    legend += (f'<span class="chip st-differs repr">{REPRESENTATION_SYMBOL} {_e(REPRESENTATION_WORDS)}</span>'
               '<span class="chip unexpected">≠! unexpected (native)</span>')
    contexts = abbreviations(list(dict.fromkeys(v.partition("@")[2] for v in report.variants)))
    key = " · ".join(f"<b>{_e(s)}</b> {_e(c)}" for c, s in contexts.items())
    return (
        '<div class="controls">'
        f'<label>dtype <select id="dtype">{options}</select></label>'
        f'<label><input type="checkbox" id="only-diff"{" checked" if only_differences else ""}> '
        'only rows with differences</label>'
        '<label><input type="checkbox" id="only-native"> only native columns</label>'
        f'<span class="legend">{legend}<span class="hint">blue-topped columns are native; '
        "italic ones cross (a legacy mechanism in a TF2 context)</span></span>"
        f'<span class="hint">contexts: {key}</span></div>'
    )


def _dtype_section(report: CheckReport, dtype: str, index: dict[int, int]) -> str:
    natives = set(native_variants(report))
    mechanisms: dict[str, list[str]] = {}
    for variant in report.variants:
        mechanisms.setdefault(variant.partition("@")[0], []).append(variant)
    starts = {group[0] for group in mechanisms.values()}
    short = abbreviations(list(dict.fromkeys(v.partition("@")[2] for v in report.variants)))
    top = "".join(
        f'<th class="mech group-start" colspan="{len(g)}" data-all="{len(g)}" '
        f'data-native="{sum(v in natives for v in g)}">{_e(m)}</th>' for m, g in mechanisms.items())
    sub = "".join(
        f'<th class="ctx-h {_kind(v, natives)}{" group-start" if v in starts else ""}" title="{_e(v)}">'
        f'{_e(short[v.partition("@")[2]])}</th>' for v in report.variants)
    rows = []
    for spec in report.specs:
        cells = {(c.scenario, c.variant): c for c in report.cells if c.spec == spec and c.dtype == dtype}
        if not cells:
            continue
        description = report.descriptions.get(spec)
        about = f'<span class="desc">{_e(description)}</span>' if description else ""
        rows.append(f'<tr class="spec-row"><th colspan="{len(report.variants) + 1}">{_e(spec)}{about}</th></tr>')
        for scenario in report.scenarios:
            row = [cells.get((scenario, v)) for v in report.variants]
            if any(row):
                rows.append(_row(scenario, report.variants, row, natives, starts, index))
    return (f'<section class="dtype" data-dtype="{_e(dtype)}"><h2>{_e(dtype)}</h2><table class="matrix"><thead>'
            f'<tr><th rowspan="2" class="row-h">spec / scenario</th>{top}</tr><tr class="ctx">{sub}</tr></thead>'
            f'<tbody>{"".join(rows)}</tbody></table></section>')


def _row(scenario: str, variants: Sequence[str], row: Sequence[Cell | None], natives: set[str], starts: set[str],
         index: dict[int, int]) -> str:
    tds = []
    for variant, cell in zip(variants, row, strict=True):
        group = " group-start" if variant in starts else ""
        if cell is None:
            tds.append(f'<td class="empty {_kind(variant, natives)}{group}"></td>')
            continue
        classes = f"cell {_CLASSES[cell.status]} {_kind(variant, natives)}{group}"
        classes += " unexpected" if cell.unexpected else ""
        classes += " repr" if representation_only(cell) else ""
        tds.append(f'<td class="{classes}" data-i="{index[id(cell)]}" title="{_e(cell_title(cell))}">'
                   f'{_e(cell_symbol(cell))}</td>')
    quiet = all(c is None or not c.differences for c in row)
    quiet_native = all(c is None or not c.native or not c.differences for c in row)
    return (f'<tr class="scen" data-quiet="{int(quiet)}" data-quiet-native="{int(quiet_native)}">'
            f'<th class="row-h">{_e(scenario)}</th>{"".join(tds)}</tr>')


def _notes(report: CheckReport) -> str:
    found = pitfalls(report)
    pitfall_items = "".join(f"<li><b>{_e(p.sentence())}</b><br><span class=\"hint\">{_e(p.scope())}</span></li>"
                            for p in found) or "<li>none</li>"
    unexpected = "".join(
        f"<li><b>{_e(c.spec)} · {_e(c.dtype)} · {_e(c.scenario)} · <code>{_e(c.variant)}</code></b> "
        f"(vs <code>{_e(c.reference)}</code>)<ul>"
        + "".join(f"<li>[{_e(d.kind)}] {_e(where(c, d))}: {_e(d.detail)}</li>" for d in c.differences)
        + "</ul></li>" for c in report.unexpected) or "<li>none</li>"
    notes = "".join(f"<li>{_e(n)}</li>" for n in representation_notes(report)) or "<li>none</li>"
    skipped = "".join(f"<li>{_e(s.spec)} / {_e(s.scenario)}: {_e(s.reason)}</li>" for s in report.skipped)
    forward_items = "".join(f"<li>{_e(line.strip())}</li>" for line in forward.summary_lines(report))
    forward_notes = (f"<h2>The custom gradient against the forward itself (autodiff, finite_difference; not "
                     f"failing)</h2><ul>{forward_items}</ul>" if forward_items else "")
    return (
        '<div class="notes">'
        f"<h2>Unexpected differences in native variants ({len(report.unexpected)})</h2><ul>{unexpected}</ul>"
        f"<h2>Migration pitfalls (cross variants; reported, not failing)</h2><ul>{pitfall_items}</ul>"
        f"<h2>Representation differences in native variants (not failing)</h2><ul>{notes}</ul>{forward_notes}"
        f"<h2>Skipped scenarios ({len(report.skipped)})</h2><ul>{skipped or '<li>none</li>'}</ul></div>"
    )


def _kind(variant: str, natives: set[str]) -> str:
    return "native" if variant in natives else "cross"


def _script_json(value: Any) -> str:
    """JSON safe inside a <script> element: no `<`, `>` or `&` can end it or open a tag."""
    text = json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)
