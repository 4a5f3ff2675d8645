"""`python -m compat.verify ORIGINAL.py REWRITTEN.py`: prove a rewrite computes what the original did.

Opt-in and not sandboxed: it imports and runs both modules (each in a child process, the original with
`tensorflow` seen as `tensorflow.compat.v1`). Run it only on code you trust. Exit codes: 0 equivalent in
every cell, 1 a cell differs or could not run, 2 usage error.

    python -m compat.verify legacy/ops.py rewritten/ops.py
    python -m compat.verify legacy/ops.py rewritten/ops.py --entries='sign_ste:float32[3];mul:float32[2,3],float32[2,3]'
"""

from __future__ import annotations

import json
import os
import sys

from absl import app, flags

from compat.apps._common import EXIT_FINDINGS, EXIT_OK, EXIT_USAGE, prepare_output
from compat.apps._output import OutputError, write_output
from compat.verify._entries import EntriesError, parse_entries
from compat.verify._runner import CONTEXTS, DEFAULT_CONTEXTS, verify_files

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

ENTRIES = flags.DEFINE_string(
    "entries", None, "Entry points and inputs, `name:dtype[shape],...;name2:...` (e.g. sign_ste:float32[3]). "
    "Default: the original's GRADCOMPAT_ENTRIES = {name: [(dtype, shape), ...]}, read without running it.")
SCENARIOS = flags.DEFINE_list("scenarios", None, "Engine scenarios to run. Default: all.")
VERIFY_CONTEXTS = flags.DEFINE_list("contexts", list(DEFAULT_CONTEXTS), f"Where the rewrite runs: {list(CONTEXTS)}.")
TIMEOUT = flags.DEFINE_float("timeout_s", 300, "Kill both children after this many seconds.")
FORMAT = flags.DEFINE_enum("format", "text", ["text", "json"], "Report format.")
OUTPUT = flags.DEFINE_string("output", None, "Write the report to this file instead of stdout (checked before the run; "
                             "a regular file is replaced atomically, a special file written as it is).")


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        raise app.UsageError("give the original and the rewritten module: python -m compat.verify "
                             "ORIGINAL.py REWRITTEN.py", exitcode=EXIT_USAGE)
    try:
        if OUTPUT.value:
            prepare_output(OUTPUT.value)
        entries = parse_entries(ENTRIES.value) if ENTRIES.value else None
        report = verify_files(argv[1], argv[2], entries, scenarios=SCENARIOS.value, contexts=VERIFY_CONTEXTS.value,
                              timeout_s=TIMEOUT.value)
    except (EntriesError, ValueError, OSError, OutputError) as exc:
        raise app.UsageError(str(exc), exitcode=EXIT_USAGE) from None
    text = json.dumps(report.to_json(), indent=2) + "\n" if FORMAT.value == "json" else report.render_text()
    if OUTPUT.value:
        try:
            write_output(OUTPUT.value, text)
        except OutputError as exc:
            raise app.UsageError(str(exc), exitcode=EXIT_USAGE) from None
    else:
        sys.stdout.write(text)
    return EXIT_OK if report.ok else EXIT_FINDINGS


if __name__ == "__main__":
    app.run(main)
