"""compat-rewrite's report as plain values: its JSON document's summary and exit code (its text: apps/_tool_text.py)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from compat.rewrite.result import OUTCOMES, STATUSES

EXIT_OK = 0
EXIT_CHANGES = 1
EXIT_INCOMPLETE = 3  # some files were skipped or failed
EXIT_TODO = 4  # legacy sites remain, marked TODO, for the user to migrate by hand

File = Mapping[str, Any]
"""One file's result as `FileResult.as_dict()` gives it."""


def summary_of(files: Sequence[File]) -> dict[str, Any]:
    """The counts of files per status and of sites per outcome."""
    counts = {status: sum(1 for f in files if f["status"] == status) for status in STATUSES}
    sites = [s for f in files for s in f["sites"]]
    return {"files": len(files), **counts, "sites": len(sites),
            **{f"sites_{outcome}": sum(1 for s in sites if s["outcome"] == outcome) for outcome in OUTCOMES}}


def verified(report: Any) -> bool:
    """Whether a file's verify result (a VerifyReport, its JSON, or why it could not run) proved the rewrite."""
    if isinstance(report, Mapping):
        return bool(report.get("ok"))
    return not isinstance(report, str) and bool(getattr(report, "ok", False))


def exit_code_of(files: Sequence[File], verify: Mapping[str, Any] | None = None) -> int:
    """3 some files skipped or failed, or a rewrite --verify did not prove; else 4 TODO sites remain; else 1
    changes proposed or made; else 0 (every site is `kept`, valid TF2 as it is, or there is none)."""
    if any(f["status"] in ("skipped", "failed") for f in files) or any(
            not verified(r) for r in (verify or {}).values()):
        return EXIT_INCOMPLETE
    if any(s["outcome"] == "todo" for f in files for s in f["sites"]):
        return EXIT_TODO
    if any(f["status"] in ("rewritten", "todo") for f in files):
        return EXIT_CHANGES
    return EXIT_OK
