"""Runs pytest on the test files a Bazel `py_test` names: `bazel_pytest.py tests/test_spec.py`.

Bazel runs each test from its runfiles tree; this forwards what Bazel asks of a test runner to pytest:
the JUnit XML report ($XML_OUTPUT_FILE), the scratch directory ($TEST_TMPDIR) and `--test_filter`
($TESTBRIDGE_TEST_ONLY, passed to pytest's `-k`).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence

USAGE = "usage: bazel_pytest.py TEST_FILE [TEST_FILE ...] [PYTEST_ARG ...]"


def pytest_args(argv: Sequence[str], env: Mapping[str, str]) -> list[str]:
    """Returns pytest's arguments for the test files in `argv` under Bazel's environment `env`.

    Example: `pytest_args(["tests/test_spec.py"], {"TEST_TMPDIR": "/t"})` ends with
    `["-p", "no:cacheprovider", "--basetemp=/t/pytest"]`.
    """
    # The runfiles tree is not ours to write: no .pytest_cache, and tmp_path lives in Bazel's scratch dir.
    args = [*argv, "-p", "no:cacheprovider"]
    if tmpdir := env.get("TEST_TMPDIR"):
        args.append(f"--basetemp={os.path.join(tmpdir, 'pytest')}")
    if xml := env.get("XML_OUTPUT_FILE"):
        args.append(f"--junitxml={xml}")
    if test_filter := env.get("TESTBRIDGE_TEST_ONLY"):
        args += ["-k", test_filter]
    return args


def main(argv: Sequence[str]) -> int:
    if not argv or argv[0].startswith("-"):
        print(USAGE, file=sys.stderr)
        return 2
    # Python put this script's directory (tools/) first on sys.path; tests must not import from there.
    here = os.path.dirname(os.path.realpath(__file__))
    if sys.path and os.path.realpath(sys.path[0] or os.curdir) == here:
        del sys.path[0]
    import pytest

    return int(pytest.main(pytest_args(argv, os.environ)))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
