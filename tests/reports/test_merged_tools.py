"""compat-rewrite's and compat-verify's JSON reports: their schemas, and the shards compat-merge refuses."""

import copy
import json
import math
import typing

import jsonschema
import pytest

from compat.comparison import Difference, DifferenceKind, Location
from compat.releases.schema import check_keywords
from compat.reports.json_report import SCHEMA_PATH
from compat.reports.merged_tools import REWRITE, VERIFY, check_tool_report, merged_tool_report, tool_schema
from compat.rewrite.report import summary_of
from compat.rewrite.result import OUTCOMES, PATTERNS, STATUSES, FileResult, Site
from compat.verify import VERIFY_STATUSES, UpstreamStatus, VerifyCell, VerifyReport


def _verify_report() -> dict:
    """A verify report as compat-verify --format=json writes it, with every kind of value a cell can hold."""
    differences = (Difference("values", Location("input_grad", 0), "max abs 0.5", max_abs=0.5, max_rel=math.inf,
                              index=(1,)),
                   Difference("count", Location("variable_grad", "W:0"), "the rewrite has no variable `W:0`"))
    cells = (VerifyCell("f", "forward", "eager_tape", "same", upstream_status=None, upstream=""),
             VerifyCell("f", "sum", "eager_tape", "differs", differences, "", "differs",
                        (Difference("values", Location("upstream", 0), "scaled", max_abs=math.nan),), "differs"),
             VerifyCell("f", "weighted", "eager_tape", "skipped", message="one output", upstream_status="not_called"))
    report = VerifyReport("a.py", "b.py", ("f",), ("sum", "weighted"), ("eager_tape",), cells, "2.21.0", 1.5,
                          notes={"f": "inputs inferred"}, not_verified={"C.method": "a method"})
    document = report.to_json()
    document["run"] = {"flags": {"contexts": ["eager_tape"], "timeout_s": 300.0}, "fingerprint": "0123"}
    document["units"] = [{"context": "eager_tape", "seconds": 1.5}]
    return document


def _rewrite_report() -> dict:
    rewritten, todo = Site(3, "override_map", "rewritten", "a custom_gradient"), Site(7, "register_gradient", "todo")
    files = [FileResult("a.py", "rewritten", sites=(rewritten,)).as_dict(),
             FileResult("b.py", "todo", sites=(todo,)).as_dict(),
             FileResult("c.py", "skipped", "not a regular file").as_dict()]
    return {"tool": "compat-rewrite", "version": "0", "in_place": False,
            "run": {"flags": {"paths": ["."], "verify": True}, "fingerprint": "0123"}, "summary": summary_of(files),
            "exit_code": 3, "default_excluded": [], "files": files,
            "units": [{"file": name, "seconds": 0.1} for name in ("a.py", "b.py", "c.py")],
            "diffs": {"a.py": "--- a.py\n+++ a.py\n"},
            "verify": {"a.py": VerifyReport.from_json(_verify_report()).to_json(), "b.py": "no entries"}}


@pytest.mark.parametrize("tool", [REWRITE, VERIFY])
def test_the_schemas_are_valid_and_only_use_what_the_standard_library_checker_checks(tool):
    jsonschema.Draft202012Validator.check_schema(tool_schema(tool))
    check_keywords(tool_schema(tool))


@pytest.mark.parametrize(("tool", "document"), [(REWRITE, _rewrite_report), (VERIFY, _verify_report)])
def test_reports_the_tools_write_validate_with_jsonschema_and_ours(tool, document):
    data = json.loads(json.dumps(document()))  # as read back from the file
    jsonschema.Draft202012Validator(tool_schema(tool)).validate(data)
    check_tool_report("r.json", data)


def test_the_schemas_name_the_codes_own_statuses_kinds_and_outcomes():
    verify, rewrite = tool_schema(VERIFY), tool_schema(REWRITE)
    check = json.loads(SCHEMA_PATH.read_text())
    assert verify["$defs"]["difference"] == rewrite["$defs"]["difference"] == check["$defs"]["difference"]
    assert set(verify["$defs"]["difference"]["properties"]["kind"]["enum"]) == set(typing.get_args(DifferenceKind))
    cell = verify["$defs"]["cell"]["properties"]
    assert cell["status"]["enum"] == list(VERIFY_STATUSES)
    assert cell["upstream_status"]["oneOf"][0]["enum"] == list(typing.get_args(UpstreamStatus))
    assert rewrite["$defs"]["cell"] == verify["$defs"]["cell"]
    embedded = rewrite["$defs"]["verify_report"]
    assert embedded["required"] == verify["required"]
    assert embedded["properties"] == {key: verify["properties"][key] for key in verify["required"]}
    assert rewrite["$defs"]["file"]["properties"]["status"]["enum"] == list(STATUSES)
    site = rewrite["$defs"]["site"]["properties"]
    assert site["outcome"]["enum"] == list(OUTCOMES) and site["pattern"]["enum"] == list(PATTERNS)


def _shards(document: dict, tool: str) -> list[tuple[str, dict]]:
    first, second = copy.deepcopy(document), copy.deepcopy(document)
    if tool == VERIFY:
        first["run"]["flags"]["contexts"] = second["run"]["flags"]["contexts"] = ["eager_tape", "function_tape"]
        second["units"] = [{"context": "function_tape", "seconds": 1.0}]
        second["cells"] = [dict(cell, context="function_tape") for cell in second["cells"]]
        first["shard"], second["shard"] = {"index": 1, "count": 2}, {"index": 2, "count": 2}
    else:
        walk = ["a.py", "b.py", "c.py"]
        first["shard"], second["shard"] = ({"index": 1, "count": 2, "files": walk},
                                           {"index": 2, "count": 2, "files": walk})
        first["files"], second["files"] = document["files"][::2], document["files"][1:2]
        first["units"], second["units"] = document["units"][::2], document["units"][1:2]
    return [("shard-1.json", first), ("shard-2.json", second)]


@pytest.mark.parametrize(("tool", "document"), [(REWRITE, _rewrite_report), (VERIFY, _verify_report)])
def test_good_shards_merge(tool, document):
    merged = merged_tool_report(_shards(document(), tool))
    check_tool_report("merged.json", merged)


VERIFY_HOSTILE = {  # each as what breaks the second shard and what the error names
    "a_cell_without_status": (lambda r: r["cells"][0].pop("status"), '$.cells[0]: "status" is missing'),
    "cells_as_a_string": (lambda r: r.update(cells="oops"), '$.cells: expected array, got string "oops"'),
    "a_difference_without_where": (lambda r: r["cells"][1]["differences"][0].pop("where"),
                                   '$.cells[1].differences[0]: "where" is missing'),
    "an_unknown_status": (lambda r: r["cells"][0].update(status="fine"), "$.cells[0].status: expected one of"),
    "a_null_summary": (lambda r: r.update(summary=None), "$.summary: expected object, got null"),
    "no_run": (lambda r: r.pop("run"), "a shard without 'run'"),
    "no_contexts": (lambda r: r["run"]["flags"].pop("contexts"), '$.run.flags: "contexts" is missing'),
    "a_cell_of_another_entry": (lambda r: r["cells"][0].update(entry="g"), "a cell of entry `g`"),
}
REWRITE_HOSTILE = {
    "a_site_without_line": (lambda r: r["files"][0]["sites"][0].pop("line"), '$.files[0].sites[0]: "line" is missing'),
    "an_unknown_outcome": (lambda r: r["files"][0]["sites"][0].update(outcome="done"),
                           "$.files[0].sites[0].outcome: expected one of"),
    "a_verify_report_without_cells": (lambda r: r.setdefault("verify", {}).update(
        {"b.py": {"tool": "gradcompat verify"}}), '$.verify["b.py"]: "version" is missing'),
    "no_units": (lambda r: r.pop("units"), '$: "units" is missing'),
    "no_run": (lambda r: r.pop("run"), '$: "run" is missing'),
}


@pytest.mark.parametrize("case", [*(f"verify-{name}" for name in VERIFY_HOSTILE),
                                  *(f"rewrite-{name}" for name in REWRITE_HOSTILE)])
def test_a_shard_that_is_not_what_its_tool_writes_is_refused_naming_file_and_place(case):
    tool, name = case.split("-", 1)
    damage, said = (VERIFY_HOSTILE if tool == "verify" else REWRITE_HOSTILE)[name]
    if tool == "verify":
        shards = _shards(_verify_report(), VERIFY)
    else:
        shards = _shards(_rewrite_report(), REWRITE)
    damage(shards[1][1])
    with pytest.raises(ValueError) as raised:
        merged_tool_report(shards)
    assert str(raised.value).startswith("shard-2.json: ") and said in str(raised.value), raised.value
