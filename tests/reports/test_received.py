"""What each gradient function received: distinct upstreams per spec and scenario, and who received them."""

import numpy as np

from compat.reports import View, render
from compat.reports.received import array_text, compact_variants, scenes


def _scene(report, scenario):
    return next(s for s in scenes(report) if s.scenario == scenario)


def test_variants_are_grouped_by_what_they_received(report):
    scene = _scene(report, "sum")
    everyone = [v for group in scene.received for v in group.variants]
    assert len(everyone) == len(set(everyone))
    tf2 = next(g for g in scene.received if "custom_gradient@eager_tape" in g.variants)
    assert {f"custom_gradient@{c}" for c in ("v1_session", "v1_tape", "eager_tape", "function_tape",
                                             "function_gradients")} <= set(tf2.variants)
    (upstream,) = tf2.upstreams
    assert upstream.kind == "dense" and np.all(upstream.value == 1.0)


def test_variants_that_never_ran_are_listed_by_status_without_values(report):
    scene = _scene(report, "sum")
    assert "override_map@eager_tape" in scene.not_run["not_called"]
    assert "defun_grad_func@eager_tape" in scene.not_run["unsupported"]
    received = {v for group in scene.received for v in group.variants}
    assert not received & {v for variants in scene.not_run.values() for v in variants}


def test_values_print_like_numpy_and_large_arrays_are_summarised():
    assert array_text(np.full(3, 3.0, np.float32)) == "[3. 3. 3.]"
    assert "..." in array_text(np.arange(1000.0))
    assert len(array_text(np.ones((50, 50, 50)))) < 400


def test_variant_lists_are_compact():
    every = ["cg@a", "cg@b", "om@a", "om@b", "om@c"]
    assert compact_variants(["cg@a", "cg@b", "om@a", "om@c"], every) == "cg@* (2), om@{a,c}"
    assert compact_variants(["om@b"], every) == "om@b"


def test_table_and_markdown_show_the_section_and_show_upstream_prints_only_it(report):
    table = render(report, "table")
    assert "What your gradient function received:" in table
    assert "received Tensor float32, static shape [4, 3]: [[1. 1. 1.] [1. 1. 1.] [1. 1. 1.] [1. 1. 1.]]" in table
    assert "never called (not_called): " in table
    only = render(report, "table", view=View(show="upstream"))
    assert only.startswith("What your gradient function received:")
    assert "legend:" not in only and "OK:" not in only and "Migration pitfalls" not in only
    markdown = render(report, "markdown")
    assert "## What your gradient function received" in markdown and "| received | by |" in markdown
    assert "IndexedSlices float32" in render(report, "markdown", view=View(show="upstream"))
