"""compat-merge: join the shards of one compat-check run into the report the run unsharded writes.

    compat-check --shard=1/3 --format=json --output=shard-1.json   # one CI job per shard, same flags otherwise
    compat-merge shard-*.json                                       # the one-screen answer, as compat-check's
    compat-merge shard-*.json --format=json --output=check.json    # the whole run's JSON report

Cells, skips, counts, verdict and exit code are those of the unsharded run, in every format (only each unit's
recorded seconds differ). Exit codes, as compat-check's: 0 every native variant agrees with the reference, 1 an
unexpected difference exists, 2 a usage error (a report that is not a shard of this gradcompat's compat-check, a
missing or repeated shard, shards of different N, of another gradcompat or TensorFlow version or other flags,
each naming the file). For several releases' shards, `python -m compat.releases` merges them into the matrix.

The shards of `compat-rewrite --shard=K/N --format=json` and `compat-verify --shard=K/N --format=json` merge the
same way, into the whole run's JSON (`--format=json`) or its text (`--format=table`, the default: what the tool
prints, its diff on stdout and its lines on stderr for compat-rewrite), with the tool's exit code.
"""

from __future__ import annotations

import sys

from absl import app, flags, logging

from compat.apps._common import EXIT_USAGE, prepare_output, run_app
from compat.apps._flag_text import flag_message
from compat.apps._output import write_output

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
    from compat.regular_files import UnreadableJson
    from compat.reports.merged import merged_report, render_document
    from compat.reports.merged_tools import tool_of

    if len(argv) < 2:
        raise _usage_error("give the JSON reports of every shard of one run (compat-check --shard=K/N --format=json)")
    try:
        tool, _ = tool_of(argv[1])
    except UnreadableJson:
        tool = None  # compat-check's loader says why
    if tool is not None:
        return _merge_tool(argv[1:])
    try:
        document = merged_report(argv[1:])
        text = render_document(document, _FORMAT.value, summary=not (_DETAILS.value or _OUTPUT.value))
    except ValueError as exc:
        raise _usage_error(flag_message(exc)) from None
    if _OUTPUT.value:
        write_output(_OUTPUT.value, text)
        logging.info("wrote %s report to %s", _FORMAT.value, _OUTPUT.value)
    else:
        print(text, end="" if text.endswith("\n") else "\n")
    exit_code: int = document["exit_code"]
    return exit_code


def _merge_tool(paths: list[str]) -> int:
    """compat-rewrite's or compat-verify's shards: their whole run's report, the tool's exit code."""
    from compat.apps._tool_text import tool_text
    from compat.regular_files import UnreadableJson
    from compat.reports.merged_tools import TOOLS, merged_tool_report, tool_of

    loaded = []
    for path in paths:
        try:
            tool, document = tool_of(path)
        except UnreadableJson as exc:
            raise _usage_error(f"{path}: not a readable JSON report ({exc}); make it with `--shard=K/N "
                               "--format=json` as the other shards") from None
        if document is None:
            raise _usage_error(f"{path}: not a compat-rewrite or compat-verify JSON report; make it with "
                               "`--shard=K/N --format=json` as the other shards")
        loaded.append((path, document))
    if _FORMAT.value not in ("table", "json"):
        raise _usage_error(f"--format={_FORMAT.value}: {TOOLS[loaded[0][1]['tool']]} reports merge to text "
                           "(--format=table) or json")
    try:
        document = merged_tool_report(loaded)
        out, err = tool_text(document, _FORMAT.value)
    except ValueError as exc:
        raise _usage_error(flag_message(exc)) from None
    if _OUTPUT.value:
        write_output(_OUTPUT.value, out + err)
    else:
        sys.stdout.write(out)
        sys.stdout.flush()
        sys.stderr.write(err)
    if document["tool"] == "gradcompat verify":
        return 0 if document["ok"] else 1
    exit_code: int = document["exit_code"]
    return exit_code


def run() -> None:
    """Console-script entry point (`compat-merge`)."""
    run_app(main, __name__, "compat-merge")


if __name__ == "__main__":
    run()
