"""The text of compat-rewrite and compat-verify, rendered from their JSON (as the tools and compat-merge write it)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from compat.apps._tool_text import TODO_MARK, rewrite_text, tool_text
from compat.rewrite.report import exit_code_of, summary_of
from compat.rewrite.result import FileResult, Site
from compat.verify import VerifyCell, VerifyReport


def _document(*, verify: dict[str, Any] | None = None, in_place: bool = False) -> dict[str, Any]:
    files = [FileResult("model.py", "rewritten", sites=(Site(3, "gradient_override_map", "rewritten"),)).as_dict(),
             FileResult("ops.py", "todo", sites=(Site(7, "defun_grad_func", "todo", "by hand"),)).as_dict(),
             FileResult("clean.py", "unchanged").as_dict()]
    document = {"tool": "compat-rewrite", "in_place": in_place, "files": files, "summary": summary_of(files),
                "exit_code": exit_code_of(files, verify), "default_excluded": ["build"],
                "diffs": {"model.py": "--- model.py\n+++ model.py\n"}}
    if verify is not None:
        document["verify"] = verify
    return document


def test_rewrite_text_puts_the_diff_on_stdout_and_one_line_per_file_with_sites_on_stderr() -> None:
    out, err = rewrite_text(_document())
    assert out == "--- model.py\n+++ model.py\n"
    lines = err.splitlines()
    assert lines[0] == "model.py: rewritten [line 3 gradient_override_map rewritten]"
    assert lines[1] == "ops.py: todo [line 7 defun_grad_func todo]"
    assert not any(line.startswith("clean.py") for line in lines)  # unchanged, no site: not listed
    assert "not walked (default excludes; --nodefault_excludes walks them, naming a directory walks it): build" in err
    assert "compat-rewrite: 3 files: 1 rewritten, 1 with TODO comments only" in err
    assert f"see the `{TODO_MARK}` comments above them (exit 4 until they are gone)" in err
    assert "not proven" not in err


def test_in_place_runs_print_no_diff() -> None:
    assert rewrite_text(_document(in_place=True))[0] == ""


def test_a_rewrite_not_proven_says_why_and_closes_with_the_verify_line() -> None:
    report = VerifyReport("model.py", "model.py (rewritten)", ("f",), ("sum",), ("eager",),
                          (VerifyCell("f", "forward", "eager", "same"),
                           VerifyCell("f", "sum", "eager", "differs", message="values differ")))
    out, err = rewrite_text(_document(verify={"model.py": report.to_json(), "ops.py": "it timed out"}))
    assert "model.py: verify: NOT proven equivalent (NOT PROVEN EQUIVALENT: 1 of 2 cells" in err
    assert "ops.py: verify: NOT proven equivalent: it timed out" in err
    assert err.endswith("compat-rewrite: --verify: some rewrites were not proven equivalent (see above)\n")


@pytest.mark.parametrize("fmt", ["table", "json"])
def test_tool_text_is_the_tools_own_text_or_its_json(fmt: str) -> None:
    document = _document()
    out, err = tool_text(document, fmt)
    if fmt == "json":
        assert json.loads(out) == document and err == ""
    else:
        assert (out, err) == rewrite_text(document)


def test_tool_text_refuses_a_format_the_tools_do_not_write() -> None:
    with pytest.raises(ValueError, match="compat-rewrite reports merge to text"):
        tool_text(_document(), "markdown")


def test_compat_rewrite_starts_without_numpy_verify_or_the_reports() -> None:
    """Its text needs compat.verify only for a run that verified: importing it (with numpy and ml_dtypes, most
    of a second) on every start slowed each compat-rewrite run threefold."""
    code = ("import sys, compat.apps.rewrite; print(sorted(m for m in ('numpy', 'ml_dtypes', 'compat.verify', "
            "'compat.reports', 'tensorflow') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          cwd=Path(__file__).resolve().parents[2])
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
