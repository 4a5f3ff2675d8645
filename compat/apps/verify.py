"""compat-verify: prove that a rewritten module computes what the original TF1 module did.

Usage:
  compat-verify [--entries='name:dtype[shape],...;...'] [--scenarios=forward,sum,...] [--contexts=...]
                [--format=text|json] [--output=FILE] [--timeout_s=300]
                [--shard=K/N [--durations=EARLIER.json]] ORIGINAL.py REWRITTEN.py

Opt-in and not sandboxed: it imports and runs both modules (each in child processes, the original with
`tensorflow` seen as `tensorflow.compat.v1`). Run it only on code you trust. Entry points come from --entries, else
the original's GRADCOMPAT_ENTRIES literal (read without running it), else they are inferred from its source (a
Defun's dtypes, the parameters of functions holding legacy sites; shapes tried per rank). Exit codes: 0
EQUIVALENT, 1 not proven equivalent (a cell differs or failed, or something was not compared), 2 usage error.

--shard=K/N splits the run by context (the entries are often inferred inside the original's child process, so
they are not known before it runs): shard K runs its contexts of --contexts (N at most their number), each shard
runs the original side again. `compat-merge` joins the shards' --format=json reports into the whole run's.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any

from absl import app, flags

from compat.apps._common import EXIT_FINDINGS, EXIT_OK, EXIT_USAGE, import_tensorflow_quietly, prepare_output, run_app
from compat.apps._flag_text import flag_message
from compat.apps._output import write_output
from compat.sharding import Shard, fingerprint, load_durations, parse_shard, split
from compat.verify import CONTEXTS, DEFAULT_CONTEXTS, EntriesError, VerifyReport, parse_entries, verify_files

_ENTRIES = flags.DEFINE_string(
    "entries", None, "Entry points and inputs, `name:dtype[shape],...;name2:...` (e.g. sign_ste:float32[3]). "
    "Default: the original's GRADCOMPAT_ENTRIES = {name: [(dtype, shape), ...]}, read without running it; else "
    "inferred from its source.")
_SCENARIOS = flags.DEFINE_list("scenarios", None, "Scenarios to compare: `forward` (the outputs) and engine "
                               "scenarios (compat-check --list). Default: all.")
_CONTEXTS = flags.DEFINE_list("contexts", list(DEFAULT_CONTEXTS), f"Where the rewrite runs: {list(CONTEXTS)}.")
_TIMEOUT = flags.DEFINE_float("timeout_s", 300, "Kill both children after this many seconds.", lower_bound=1)
_FORMAT = flags.DEFINE_enum("format", "text", ["text", "json"], "Report format.")
_SHARD = flags.DEFINE_string(
    "shard", None, "K/N: run only shard K (1-based) of N of the --contexts (split by context: entries are often "
    "inferred in the original's child process, so they are not split); context i goes to shard i mod N, or "
    "balanced by --durations. Join the shards' --format=json reports with compat-merge.")
_DURATIONS = flags.DEFINE_string("durations", None, "With --shard: a JSON report of an earlier compat-verify run "
                                 "(whole, merged or a shard's; its `units` hold each context's seconds).")
_OUTPUT = flags.DEFINE_string("output", None, "Write the report to this file instead of stdout (checked before the "
                              "run; a regular file is replaced atomically, a special file written as it is).")


def main(argv: Sequence[str]) -> int:
    if len(argv) != 3:
        raise app.UsageError("give the original and the rewritten module: compat-verify ORIGINAL.py REWRITTEN.py",
                             exitcode=EXIT_USAGE)
    if _OUTPUT.value:
        prepare_output(_OUTPUT.value)
    contexts, shard = _shard_contexts()
    import_tensorflow_quietly()  # the scenario names are checked before the children start
    try:
        entries = parse_entries(_ENTRIES.value) if _ENTRIES.value is not None else None
        report = verify_files(argv[1], argv[2], entries, scenarios=_SCENARIOS.value, contexts=contexts,
                              timeout_s=_TIMEOUT.value)
    except (EntriesError, ValueError, OSError) as exc:
        raise app.UsageError(flag_message(exc), exitcode=EXIT_USAGE) from None
    if _FORMAT.value == "json":
        text = json.dumps(_document(report, argv, contexts, shard), indent=2) + "\n"
    else:
        text = report.render_text()
    if _OUTPUT.value:
        write_output(_OUTPUT.value, text)
    else:
        sys.stdout.write(text)
    return EXIT_OK if report.ok else EXIT_FINDINGS


def _shard_contexts() -> tuple[list[str], Shard | None]:
    """The contexts this run (shard) verifies in, and its shard; a bad --shard or --durations is a usage error."""
    contexts = list(_CONTEXTS.value)
    if _SHARD.value is None:
        if _DURATIONS.value is not None:
            raise app.UsageError("--durations only applies with --shard (it balances the shards)",
                                 exitcode=EXIT_USAGE)
        return contexts, None
    try:
        shard = parse_shard(_SHARD.value, "--shard")
        durations = load_durations(_DURATIONS.value, "--durations", "compat-verify") if _DURATIONS.value else None
    except ValueError as exc:
        raise app.UsageError(str(exc), exitcode=EXIT_USAGE) from None
    if shard.count > len(contexts):
        raise app.UsageError(f"--shard={shard}: compat-verify splits by context and --contexts names "
                             f"{len(contexts)}; give N <= {len(contexts)}", exitcode=EXIT_USAGE)
    return [contexts[i] for i in split(contexts, shard.count, durations)[shard.index - 1]], shard


def _document(report: VerifyReport, argv: Sequence[str], contexts: list[str], shard: Shard | None) -> dict[str, Any]:
    """The JSON report, with the flags that shape it (`run`), each context's seconds (`units`) and its shard."""
    values = {"original": argv[1], "rewritten": argv[2], "entries": _ENTRIES.value, "scenarios": _SCENARIOS.value,
              "contexts": list(_CONTEXTS.value), "timeout_s": _TIMEOUT.value}
    document = report.to_json()
    document["run"] = {"flags": values, "fingerprint": fingerprint(values)}
    seconds = round(report.elapsed_s / len(contexts), 3)  # both sides run all of them together: an even share
    document["units"] = [{"context": context, "seconds": seconds} for context in contexts]
    if shard is not None:
        document["shard"] = {"index": shard.index, "count": shard.count}
    return document


def run() -> None:
    """Console-script entry point (`compat-verify`)."""
    run_app(main, __name__, "compat-verify")


if __name__ == "__main__":
    run()
