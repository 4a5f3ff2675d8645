"""compat-rewrite's report values: per-status counts and the exit code, from the files' results."""

from __future__ import annotations

from typing import Any

import pytest

from compat.rewrite.report import EXIT_CHANGES, EXIT_INCOMPLETE, EXIT_OK, EXIT_TODO, exit_code_of, summary_of, verified
from compat.rewrite.result import FileResult, Site


def _file(status: str, *outcomes: str) -> dict[str, Any]:
    sites = tuple(Site(line=n + 1, pattern="gradient_override_map", outcome=o)  # type: ignore[arg-type]
                  for n, o in enumerate(outcomes))
    return FileResult(path=f"{status}.py", status=status, sites=sites).as_dict()  # type: ignore[arg-type]


def test_the_summary_counts_files_per_status_and_sites_per_outcome() -> None:
    files = [_file("rewritten", "rewritten", "kept"), _file("todo", "todo"), _file("unchanged"),
             _file("skipped", "rewritten")]
    summary = summary_of(files)
    assert summary == {"files": 4, "rewritten": 1, "todo": 1, "unchanged": 1, "skipped": 1, "failed": 0,
                       "sites": 4, "sites_rewritten": 1, "sites_kept": 1, "sites_todo": 1, "sites_skipped": 1}


@pytest.mark.parametrize(("files", "verify", "code"), [
    ([], None, EXIT_OK),
    ([_file("unchanged", "kept")], None, EXIT_OK),
    ([_file("rewritten", "rewritten")], None, EXIT_CHANGES),
    ([_file("rewritten", "rewritten"), _file("todo", "todo")], None, EXIT_TODO),
    ([_file("rewritten", "rewritten"), _file("failed")], None, EXIT_INCOMPLETE),
    ([_file("rewritten", "rewritten")], {"rewritten.py": {"ok": True}}, EXIT_CHANGES),
    ([_file("rewritten", "rewritten")], {"rewritten.py": {"ok": False}}, EXIT_INCOMPLETE),
    ([_file("rewritten", "rewritten")], {"rewritten.py": "the original could not be imported"}, EXIT_INCOMPLETE),
])
def test_the_exit_code_puts_incomplete_before_todo_before_changes(files: list[dict[str, Any]],
                                                                   verify: dict[str, Any] | None, code: int) -> None:
    assert exit_code_of(files, verify) == code


def test_only_a_report_that_says_ok_is_verified() -> None:
    class Report:
        ok = True

    assert verified(Report()) and verified({"ok": True})
    assert not verified({"ok": False}) and not verified({}) and not verified("timed out") and not verified(object())
