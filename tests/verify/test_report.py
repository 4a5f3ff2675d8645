"""EQUIVALENT needs something compared: no verdict passes on skipped, unsupported or unverified cells."""

from __future__ import annotations

from compat.verify import VerifyCell, VerifyReport


def _report(statuses: dict[str, str], **kwargs) -> VerifyReport:
    cells = tuple(VerifyCell("f", scenario, "eager_tape", status) for scenario, status in statuses.items())  # type: ignore[arg-type]
    return VerifyReport("a.py", "b.py", ("f",), tuple(s for s in statuses if s != "forward"), ("eager_tape",),
                        cells, **kwargs)


def test_every_gradient_unsupported_is_not_a_proof():
    report = _report({"forward": "same", "sum": "unsupported", "gather": "skipped"})
    assert not report.ok
    assert report.uncompared() == ("`f` in eager_tape: no gradient was compared (every scenario was skipped or "
                                   "unsupported)",)
    assert report.render_text().startswith("compat.verify: b.py against a.py (TensorFlow ?): NOT PROVEN EQUIVALENT: "
                                           "1 of 3 cells compared and the same")


def test_outputs_and_one_gradient_compared_is_a_proof_and_the_summary_counts_them():
    report = _report({"forward": "same", "sum": "same", "gather": "skipped", "second_order": "unsupported"})
    assert report.ok
    assert report.summary().startswith("EQUIVALENT: 2 of 4 cells compared and the same; 1 skipped")
    assert report.to_json()["compared"] == 2


def test_a_place_left_unverified_fails_the_verdict():
    report = _report({"forward": "same", "sum": "same"}, not_verified={"class Net": "line 3 is in a method"})
    assert not report.ok and "not verified: class Net: line 3 is in a method" in report.render_text()


def test_no_cells_is_no_proof():
    assert not VerifyReport("a.py", "b.py", (), (), ("eager_tape",), ()).ok
