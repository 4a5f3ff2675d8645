"""The JSON report: schema-valid, complete, and safe for NaN and infinities."""

import json
from collections import Counter

import jsonschema
import pytest

from compat.reports import RENDERERS, render
from compat.reports.json_report import SCHEMA_PATH


@pytest.fixture(name="schema", scope="module")
def schema_fixture():
    schema = json.loads(SCHEMA_PATH.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return schema


def test_real_report_validates_and_round_trips_cells(report, schema):
    data = json.loads(render(report, "json"))
    jsonschema.Draft202012Validator(schema).validate(data)
    assert len(data["cells"]) == len(report.cells)
    assert [c["status"] for c in data["cells"]] == [c.status for c in report.cells]
    counts = Counter(c.status for c in report.cells)
    assert data["summary"]["by_status"] == {s: counts[s] for s in ("same", "differs", "not_called", "unsupported",
                                                                   "error", "not_observable")}
    assert data["exit_code"] == report.exit_code
    assert data["tensorflow"] == report.tensorflow
    assert [(s["spec"], s["scenario"]) for s in data["skipped"]] == [(s.spec, s.scenario) for s in report.skipped]


def test_upstream_is_what_the_gradient_function_received(report):
    data = json.loads(render(report, "json"))
    cells = {(c["scenario"], c["variant"]): c for c in data["cells"]}
    gather = cells["gather", "custom_gradient@eager_tape"]
    upstream = gather["upstream"][0]
    assert upstream["kind"] == "indexed_slices"
    assert upstream["indices"] == [0, 3, 0]
    assert upstream["dense_shape"] == [4, 3]
    assert upstream["value"] == [[1.0, 1.0, 1.0]] * 3
    never = next(c for c in data["cells"] if c["status"] == "not_called")
    assert never["upstream"] is None and never["calls"] == 0


def test_nan_and_infinity_are_strings_and_output_is_strict_json(handmade_report, schema):
    text = render(handmade_report, "json")
    data = json.loads(text, parse_constant=lambda name: pytest.fail(f"non-standard JSON constant {name}"))
    jsonschema.Draft202012Validator(schema).validate(data)
    cell = data["cells"][1]
    assert cell["upstream"][0]["value"] == ["NaN", 1.0]
    assert cell["upstream"][0]["static_shape"] == [None]
    assert cell["input_grads"] == [["Infinity", "-Infinity"]]
    assert cell["differences"][0] | {"detail": ""} == {"kind": "values", "detail": "", "where": "upstream[0]",
                                                      "breaking": True, "max_abs": "NaN", "max_rel": "Infinity",
                                                      "index": [0]}
    assert data["exit_code"] == 1 and data["verdict"].startswith("FAIL: 1 unexpected")


def test_key_order_is_deterministic(handmade_report):
    assert render(handmade_report, "json") == render(handmade_report, "json")
    assert list(json.loads(render(handmade_report, "json"))["cells"][0])[:4] == ["spec", "scenario", "dtype", "variant"]


def test_unknown_format_lists_the_valid_ones(report):
    with pytest.raises(ValueError, match="unknown report format 'nope'") as caught:
        render(report, "nope")
    for name in RENDERERS:
        assert name in str(caught.value)
    assert set(RENDERERS) == {"table", "json", "markdown", "html"}


def test_large_arrays_are_summarised_unless_every_array_is_asked_for():
    import hashlib

    import numpy as np

    from compat.reports.json_report import array

    value = np.linspace(0.0, 1.0, 1001, dtype=np.float32)
    summary = array(value, 1000)
    assert summary["summary"] is True and summary["shape"] == [1001] and summary["size"] == 1001
    assert summary["min"] == 0.0 and summary["max"] == 1.0 and len(summary["first"]) == 10
    assert summary["sha256"] == hashlib.sha256(value.tobytes()).hexdigest()
    assert isinstance(array(value, 0), list) and isinstance(array(value, 1001), list)
    assert array(np.array([np.nan] * 2000, np.float32), 1000)["mean"] == "NaN"
