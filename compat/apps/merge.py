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

from absl import app, flags, logging

from compat.apps._common import EXIT_USAGE, prepare_output, run_app
from compat.apps._output import write_output
from compat.reports.merged import merged_report, render_document

_FORMAT = flags.DEFINE_enum("format", "table", ["table", "json", "markdown", "html"], "Report format.")
_OUTPUT = flags.DEFINE_string("output", None, "Write the report to this file instead of stdout (checked before "
                              "merging; a regular file is replaced atomically).")
_DETAILS = flags.DEFINE_bool("details", False, "table: every section of the report instead of the one-screen "
                             "summary (a report written with --output is whole already).")


def _usage_error(message: str) -> app.UsageError:
    return app.UsageError(message, exitcode=EXIT_USAGE)


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
