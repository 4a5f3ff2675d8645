"""The HTML report in a real headless browser: at 1400 px the whole matrix fits beside the details panel.

Needs Chromium (Debian/Ubuntu: `apt-get install chromium`); skipped, with that reason, where it is missing.
"""

import json
import shutil
import struct
import subprocess

import pytest

from compat.reports import render
from compat.variants import VARIANTS

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="needs Chromium on PATH (apt-get install chromium)")

_PROBE = """<script>
(function () {
  const box = n => { const r = n.getBoundingClientRect(); return {left: r.left, right: r.right, top: r.top,
                                                                  bottom: r.bottom}; };
  const matrices = document.querySelector('.matrices');
  const headers = document.querySelectorAll('table.matrix th.ctx-h');
  const probe = document.createElement('pre');
  probe.id = 'layout-probe';
  probe.textContent = JSON.stringify({
    panel: box(document.getElementById('details')), matrices: box(matrices),
    last_column: box(headers[headers.length - 1]), last_column_title: headers[headers.length - 1].title,
    page_width: document.documentElement.scrollWidth, window_width: window.innerWidth,
    matrices_scroll: matrices.scrollWidth, matrices_client: matrices.clientWidth});
  document.body.appendChild(probe);
})();
</script></body>"""


def _chromium(tmp_path, page, width, *args):
    command = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
               f"--user-data-dir={tmp_path / 'profile'}", f"--window-size={width},900", *args, page.as_uri()]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=True).stdout


def _layout(tmp_path, report, width):
    page = tmp_path / f"layout-{width}.html"
    page.write_text(render(report, "html").replace("</body>", _PROBE, 1), encoding="utf-8")
    dom = _chromium(tmp_path, page, width, "--dump-dom")
    start = dom.index('<pre id="layout-probe">') + len('<pre id="layout-probe">')
    return json.loads(dom[start:dom.index("</pre>", start)].replace("&quot;", '"').replace("&amp;", "&"))


def test_at_1400_px_the_whole_matrix_fits_beside_the_panel(tmp_path, report):
    layout = _layout(tmp_path, report, 1400)
    assert layout["window_width"] == 1400
    assert layout["page_width"] <= 1400, "the page scrolls sideways"
    assert layout["matrices"]["right"] <= layout["panel"]["left"], "the panel covers the matrix"
    assert layout["last_column_title"] == VARIANTS[-1]
    assert layout["last_column"]["right"] <= layout["matrices"]["right"], "the custom_gradient columns are cut"
    assert layout["matrices_scroll"] <= layout["matrices_client"]


def test_when_narrower_the_matrix_scrolls_beside_the_panel_not_under_it(tmp_path, report):
    layout = _layout(tmp_path, report, 1000)
    assert layout["page_width"] <= 1000
    assert layout["matrices"]["right"] <= layout["panel"]["left"]
    assert layout["matrices_scroll"] > layout["matrices_client"]  # its own scroll bar, inside its box


def test_screenshot_at_1400_px(tmp_path, report):
    page = tmp_path / "report.html"
    page.write_text(render(report, "html"), encoding="utf-8")
    shot = tmp_path / "report.png"
    _chromium(tmp_path, page, 1400, f"--screenshot={shot}")
    header = shot.read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n"
    assert struct.unpack(">II", header[16:24]) == (1400, 900)
