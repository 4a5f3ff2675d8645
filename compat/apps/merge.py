"""compat-merge: join the shards of one compat-check run into the report the run unsharded writes.

    compat-check --shard=1/3 --format=json --output=shard-1.json   # one CI job per shard, same flags otherwise
    compat-merge shard-*.json                                       # the one-screen answer, as compat-check's
    compat-merge shard-*.json --format=json --output=check.json    # the whole run's JSON report

Cells, skips, counts, verdict and exit code are those of the unsharded run, in every format (only each unit's
recorded seconds differ). Exit codes, as compat-check's: 0 every native variant agrees with the reference, 1 an
unexpected difference exists, 2 a usage error (a report that is not a shard of this gradcompat's compat-check, a
missing or repeated shard, shards of different N, of another gradcompat or TensorFlow version or other flags,
each naming the file). For several releases' shards, `python -m compat.releases` merges them into the matrix.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from absl import app, flags, logging

from compat.apps._common import EXIT_USAGE, prepare_output, run_app
from compat.apps._output import write_output

_FORMAT = flags.DEFINE_enum("format", "table", ["table", "json", "markdown", "html"], "Report format.")
_OUTPUT = flags.DEFINE_string("output", None, "Write the report to this file instead of stdout (checked before "
                              "merging; a regular file is replaced atomically).")
_DETAILS = flags.DEFINE_bool("details", False, "table: every section of the report instead of the one-screen "
                             "summary (a report written with --output is whole already).")


def _usage_error(message: str) -> app.UsageError:
    return app.UsageError(message, exitcode=EXIT_USAGE)


def merged_report(paths: Sequence[str]) -> dict[str, Any]:
    """The whole run's JSON document from its shards' files (or one whole report); ValueError naming the file."""
    from compat.releases import join_shards, load_report

    if not paths:
        raise ValueError("give the JSON reports of every shard of one run (compat-check --shard=K/N --format=json)")
    joined = join_shards([(path, load_report(path)) for path in paths])
    if len(joined) != 1:
        names = ", ".join(str(path) for path, _ in joined)
        raise ValueError(f"these are {len(joined)} runs, not the shards of one ({names}): merge one run's shards, "
                         "or several releases with `python -m compat.releases`")
    document = dict(joined[0][1])
    document.pop("release", None)  # added when loading (from the file name); compat-check never writes it
    return document


def render_document(document: dict[str, Any], fmt: str, summary: bool) -> str:
    """`document` in format `fmt`, as compat-check renders the report it came from."""
    if fmt == "json":
        return json.dumps(document, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    from compat.reports import render
    from compat.reports.json_report import DEFAULT_MAX_ARRAY_ELEMENTS
    from compat.reports.load import report_from_dict
    from compat.reports.view import View

    limit = (document.get("run") or {}).get("flags", {}).get("max_array_elements")
    report = report_from_dict(document)
    return render(report, fmt, max_array_elements=DEFAULT_MAX_ARRAY_ELEMENTS if limit is None else limit,
                  view=View(summary=summary))


def main(argv: list[str]) -> int:
    if _DETAILS.value and _FORMAT.value != "table":
        raise _usage_error(f"--details applies to --format=table; {_FORMAT.value} reports are always whole")
    if _OUTPUT.value:
        prepare_output(_OUTPUT.value)
    try:
        document = merged_report(argv[1:])
        text = render_document(document, _FORMAT.value, summary=not (_DETAILS.value or _OUTPUT.value))
    except ValueError as exc:
        raise _usage_error(str(exc)) from None
    if _OUTPUT.value:
        write_output(_OUTPUT.value, text)
        logging.info("wrote %s report to %s", _FORMAT.value, _OUTPUT.value)
    else:
        print(text, end="" if text.endswith("\n") else "\n")
    exit_code: int = document["exit_code"]
    return exit_code


def run() -> None:
    """Console-script entry point (`compat-merge`)."""
    run_app(main, __name__, "compat-merge")


if __name__ == "__main__":
    run()
