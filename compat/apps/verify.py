"""compat-verify: prove that a rewritten module computes what the original TF1 module did.

Usage:
  compat-verify [--entries='name:dtype[shape],...;...'] [--scenarios=forward,sum,...] [--contexts=...]
                [--format=text|json] [--output=FILE] [--timeout_s=300] ORIGINAL.py REWRITTEN.py

Opt-in and not sandboxed: it imports and runs both modules (each in child processes, the original with
`tensorflow` seen as `tensorflow.compat.v1`). Run it only on code you trust. Entry points come from --entries, else
the original's GRADCOMPAT_ENTRIES literal (read without running it), else they are inferred from its source (a
Defun's dtypes, the parameters of functions holding legacy sites; shapes tried per rank). Exit codes: 0
EQUIVALENT, 1 not proven equivalent (a cell differs or failed, or something was not compared), 2 usage error.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence

from absl import app, flags

from compat.apps._common import EXIT_FINDINGS, EXIT_OK, EXIT_USAGE, import_tensorflow_quietly, prepare_output, run_app
from compat.apps._output import write_output
from compat.verify import CONTEXTS, DEFAULT_CONTEXTS, EntriesError, parse_entries, verify_files

_ENTRIES = flags.DEFINE_string(
    "entries", None, "Entry points and inputs, `name:dtype[shape],...;name2:...` (e.g. sign_ste:float32[3]). "
    "Default: the original's GRADCOMPAT_ENTRIES = {name: [(dtype, shape), ...]}, read without running it; else "
    "inferred from its source.")
_SCENARIOS = flags.DEFINE_list("scenarios", None, "Scenarios to compare: `forward` (the outputs) and engine "
                               "scenarios (compat-check --list). Default: all.")
_CONTEXTS = flags.DEFINE_list("contexts", list(DEFAULT_CONTEXTS), f"Where the rewrite runs: {list(CONTEXTS)}.")
_TIMEOUT = flags.DEFINE_float("timeout_s", 300, "Kill both children after this many seconds.", lower_bound=1)
_FORMAT = flags.DEFINE_enum("format", "text", ["text", "json"], "Report format.")
_OUTPUT = flags.DEFINE_string("output", None, "Write the report to this file instead of stdout (checked before the "
                              "run; a regular file is replaced atomically, a special file written as it is).")


def main(argv: Sequence[str]) -> int:
    if len(argv) != 3:
        raise app.UsageError("give the original and the rewritten module: compat-verify ORIGINAL.py REWRITTEN.py",
                             exitcode=EXIT_USAGE)
    if _OUTPUT.value:
        prepare_output(_OUTPUT.value)
    import_tensorflow_quietly()  # the scenario names are checked before the children start
    try:
        entries = parse_entries(_ENTRIES.value) if _ENTRIES.value is not None else None
        report = verify_files(argv[1], argv[2], entries, scenarios=_SCENARIOS.value, contexts=_CONTEXTS.value,
                              timeout_s=_TIMEOUT.value)
    except (EntriesError, ValueError, OSError) as exc:
        raise app.UsageError(str(exc), exitcode=EXIT_USAGE) from None
    text = json.dumps(report.to_json(), indent=2) + "\n" if _FORMAT.value == "json" else report.render_text()
    if _OUTPUT.value:
        write_output(_OUTPUT.value, text)
    else:
        sys.stdout.write(text)
    return EXIT_OK if report.ok else EXIT_FINDINGS


def run() -> None:
    """Console-script entry point (`compat-verify`)."""
    run_app(main, __name__, "compat-verify")


if __name__ == "__main__":
    run()
