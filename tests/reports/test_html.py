"""The HTML report: one self-contained file, every cell an element with its status, all text escaped."""

import re
from collections import Counter

from compat.reports import render


def test_self_contained(report):
    page = render(report, "html")
    assert page.startswith("<!DOCTYPE html>")
    assert "http://" not in page and "https://" not in page
    assert "src=" not in page and "<link" not in page and "@import" not in page


def test_one_cell_element_per_cell_with_its_status_class(report):
    page = render(report, "html")
    found = re.findall(r'<td class="cell st-(\w+)[^"]*" data-i="(\d+)"', page)
    assert sorted(int(i) for _, i in found) == list(range(len(report.cells)))
    assert Counter(status for status, _ in found) == Counter(c.status for c in report.cells)
    assert f"TensorFlow <b>{report.tensorflow}</b>" in page
    assert 'class="verdict ok"' in page


def test_text_is_escaped(handmade_report):
    page = render(handmade_report, "html")
    assert "<script>alert(1)</script>" not in page
    assert "<b>here</b>" not in page
    assert "&lt;b&gt;here&lt;/b&gt;" in page  # title and unexpected list
    assert page.count("<script") == 2  # the data island and the page script, nothing injected
    assert "\\u003cscript\\u003ealert(1)\\u003c/script\\u003e" in page  # the message, for the details panel
    assert re.search(r'<td class="cell st-differs native[^"]* unexpected"', page)
    assert 'class="verdict fail"' in page


def test_counts_keep_representation_only_cells_apart_and_filter_can_start_ticked(report):
    from compat.reports import View

    page = render(report, "html")
    assert '<span class="chip st-differs repr">other form: ' in page
    assert '<span class="chip st-differs">differs: 0' in page
    assert 'id="only-diff">' in page
    assert 'id="only-diff" checked>' in render(report, "html", view=View(only_differences=True))
