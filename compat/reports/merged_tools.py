"""The whole run's report from the shards of a `compat-rewrite --shard` or `compat-verify --shard` run."""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from compat.regular_files import read_json
from compat.releases.schema import SchemaMismatch, validate
from compat.releases.shards import Loaded, ordered_shards

REWRITE = "compat-rewrite"
VERIFY = "gradcompat verify"
TOOLS = {REWRITE: "compat-rewrite", VERIFY: "compat-verify"}
"""The `tool` of each report these shards can come from -> the command that writes it."""
_SCHEMAS = {REWRITE: "rewrite_report.schema.json", VERIFY: "verify_report.schema.json"}
_SHARD_KEYS = ("run", "units")
"""What a shard holds beyond a whole report (`--format=json` writes them; `VerifyReport.to_json` does not)."""


@functools.cache
def tool_schema(tool: str) -> dict[str, Any]:
    """The JSON Schema of the reports of `tool` (a key of TOOLS), shipped beside check_report.schema.json."""
    text = (Path(__file__).resolve().parent / _SCHEMAS[tool]).read_text(encoding="utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


def check_tool_report(path: str | Path, report: dict[str, Any]) -> None:
    """ValueError naming `path`, the JSON path and what is wrong when `report` is not what its tool writes (a
    shard also holds its run's flags and units)."""
    tool = report["tool"]
    try:
        validate(report, tool_schema(tool))
    except SchemaMismatch as exc:
        raise ValueError(f"{path}: {exc}; this is not a {TOOLS[tool]} JSON report as this gradcompat writes it: "
                         "make it again with the same gradcompat as the other shards") from None
    missing = [key for key in _SHARD_KEYS if "shard" in report and key not in report]
    if missing:
        raise ValueError(f"{path}: a shard without {' or '.join(f'{key!r}' for key in missing)}: not a shard as "
                         f"{TOOLS[tool]} writes it; make it again with the same gradcompat as the other shards")


def tool_of(path: str | Path) -> tuple[str | None, dict[str, Any] | None]:
    """(`tool`, document) of a JSON report when it is compat-rewrite's or compat-verify's, else (None, None);
    `compat.regular_files.UnreadableJson` when `path` is not a readable JSON file (never blocks on a FIFO)."""
    data = read_json(path)
    if isinstance(data, dict) and data.get("tool") in TOOLS:
        return data["tool"], data
    return None, None


def merged_tool_report(loaded: Sequence[Loaded]) -> dict[str, Any]:
    """The whole run's JSON document from all its shards' (each of one tool; a whole report is returned as is).

    Raises:
      ValueError: a report that breaks its tool's schema (`check_tool_report`), reports of different tools, a
        report that is not a shard next to others, or shards that cannot make one run
        (`compat.releases.shards.ordered_shards`); the message names the file.
    """
    tool = loaded[0][1]["tool"]
    for path, report in loaded:
        check_tool_report(path, report)
        if report["tool"] != tool:
            raise ValueError(f"{path} is a {TOOLS[report['tool']]} report but {loaded[0][0]} is a {TOOLS[tool]} "
                             "one: merge the shards of one run")
        if "shard" not in report and len(loaded) > 1:
            raise ValueError(f"{path} is a whole {TOOLS[tool]} report, not a shard: pass only the shard "
                             "reports (K/N) of one run")
    if "shard" not in loaded[0][1]:
        return dict(loaded[0][1])
    ordered = ordered_shards(loaded, TOOLS[tool])
    return _join_rewrite(ordered) if tool == REWRITE else _join_verify(ordered)


def _owned(ordered: Sequence[Loaded], units: Sequence[str], key: str) -> dict[str, Loaded]:
    """The shard that ran each unit; ValueError if one ran in two shards or in none."""
    owner: dict[str, Loaded] = {}
    for path, report in ordered:
        for unit in report["units"]:
            if unit[key] in owner:
                raise ValueError(f"{owner[unit[key]][0]} and {path} both ran {unit[key]}: the shards split the "
                                 "units differently; give every shard the same durations file (or none)")
            owner[unit[key]] = (path, report)
    for unit in units:
        if unit not in owner:
            raise ValueError(f"no shard ran {unit} (given: {', '.join(str(p) for p, _ in ordered)}): the shards "
                             "split the units differently; give every shard the same durations file (or none)")
    return owner


def _join_rewrite(ordered: Sequence[Loaded]) -> dict[str, Any]:
    from compat.rewrite.report import exit_code_of, summary_of

    first_path, first = ordered[0]
    walk = first["shard"]["files"]
    for path, report in ordered[1:]:
        if report["shard"]["files"] != walk:
            raise ValueError(f"{path} walked other files than {first_path}: the tree changed between the shards; "
                             "run every shard on the same tree")
    owner = _owned(ordered, walk, "file")

    def of(path: str, key: str) -> list[Any]:
        return [item for item in owner[path][1][key] if item.get("path", item.get("file")) == path]
    files = [file for path in walk for file in of(path, "files")]
    verify = {path: owner[path][1]["verify"][path] for path in walk if path in owner[path][1].get("verify", {})}
    whole: dict[str, Any] = {key: value for key, value in first.items() if key not in ("shard", "diffs", "verify")}
    whole.update({"summary": summary_of(files), "exit_code": exit_code_of(files, verify), "files": files,
                  "units": [unit for path in walk for unit in of(path, "units")]})
    if "diffs" in first:
        whole["diffs"] = {path: owner[path][1]["diffs"][path] for path in walk if path in owner[path][1]["diffs"]}
    if verify:
        whole["verify"] = verify
    return whole


def _join_verify(ordered: Sequence[Loaded]) -> dict[str, Any]:
    from compat.verify import VerifyReport

    first = ordered[0][1]
    contexts = first["run"]["flags"]["contexts"]
    owner = _owned(ordered, contexts, "context")
    reports = [VerifyReport.from_json(report) for _, report in ordered]
    rows = ["forward", *first["scenarios"]]
    for (path, _), report in zip(ordered, reports, strict=True):
        stray = next((c for c in report.cells if c.entry not in first["entries"] or c.scenario not in rows
                      or c.context not in contexts), None)
        if stray is not None:
            raise ValueError(f"{path}: a cell of entry `{stray.entry}`, scenario `{stray.scenario}` and context "
                             f"`{stray.context}` that {ordered[0][0]}'s entries, scenarios and contexts do not hold: "
                             "the shards are not of one run (entries inferred differently?); declare the entries "
                             "and run every shard again")
    cells = sorted((cell for report in reports for cell in report.cells),
                   key=lambda c: (first["entries"].index(c.entry), rows.index(c.scenario),
                                  contexts.index(c.context)))
    whole = VerifyReport(original=first["original"], rewritten=first["rewritten"], entries=tuple(first["entries"]),
                         scenarios=tuple(first["scenarios"]), contexts=tuple(contexts), cells=tuple(cells),
                         tensorflow=first["tensorflow"], elapsed_s=sum(r.elapsed_s for r in reports),
                         notes=reports[0].notes, not_verified=reports[0].not_verified).to_json()
    whole["run"] = first["run"]
    whole["units"] = [unit for context in contexts for unit in owner[context][1]["units"]
                      if unit["context"] == context]
    return whole
