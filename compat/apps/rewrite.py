"""compat-rewrite: migrate legacy custom gradients (Defun, RegisterGradient, override maps) to tf.custom_gradient.

Usage:
  compat-rewrite [--in-place] [--format=text|json] [--verify] [--exclude=GLOB,...] [--nodefault_excludes]
                 [--shard=K/N [--durations=EARLIER.json]] PATH...

Without --in-place it prints a unified diff and changes nothing. Never imports TensorFlow (except for --verify).
Exit codes (the first that applies): 3 some files skipped or failed; 4 legacy sites remain TODO (marked
`# TODO(gradcompat)`, for you to migrate by hand; a re-run finds them again); 1 changes proposed or made, every
site rewritten or kept; 0 nothing to do (every site kept: valid TF2 as it is, or none). 2 usage error; 130
Ctrl-C, 128+N stopped by signal N (e.g. 143 SIGTERM): files written so far are complete, the one being written is
left as it was.

--shard=K/N rewrites (and with --verify verifies) only shard K of the files walked, with or without --verify
and --in-place (each CI job migrates its part of a tree); what is registered or used across files is still found
in the whole tree, so every file gets the outcome the whole run gives it. `compat-merge` joins the shards'
`--format=json` reports into the whole run's (its text too).
"""

from __future__ import annotations

import contextlib
import dataclasses
import difflib
import json
import os
import signal
import sys
import time
from collections.abc import Iterator, Sequence
from typing import Any

from absl import app, flags

from compat._version import __version__
from compat.apps._common import (
    DEFAULT_EXCLUDES_HELP,
    EXIT_FINDINGS,
    EXIT_USAGE,
    import_tensorflow_quietly,
    run_app,
)
from compat.apps._flag_text import flag_message
from compat.apps._progress import progress_on_stderr
from compat.apps._tool_text import not_proven_line, rewrite_text, summary_line
from compat.audit.findings import display_path
from compat.rewrite import FileResult, report, rewrite_paths
from compat.rewrite.files import DEFAULT_MAX_FILE_BYTES, write_result
from compat.sharding import Shard, fingerprint, load_durations, parse_shard, split

EXIT_CHANGES = EXIT_FINDINGS
EXIT_INCOMPLETE = report.EXIT_INCOMPLETE
EXIT_TODO = report.EXIT_TODO

_IN_PLACE = flags.DEFINE_bool(
    "in_place", False, "Write the rewrites into the files (atomically, keeping owner, group and mode); read-only "
    "and hard-linked files are skipped, saying why (exit 3); default: print a unified diff.")
_FORMAT = flags.DEFINE_enum("format", "text", ["text", "json"], "text: the diff and a summary; json: per-file "
                            "and per-site results.")
_VERIFY = flags.DEFINE_bool(
    "verify", False, "Prove each rewritten file equivalent with compat.verify before anything is written: with "
    "--in-place only proven rewrites are written. Opt-in: it imports and RUNS your code (the original in a v1 "
    "Session, the rewrite in TF2, each in a child process). Entry points come from the file's GRADCOMPAT_ENTRIES "
    "or --entries.")
_ENTRIES = flags.DEFINE_string(
    "entries", None, "With --verify, for files that declare no GRADCOMPAT_ENTRIES: the functions to run and their "
    "inputs, e.g. 'model_fn:float32[8,3];ste:float32[3]' (name:dtype[shape],dtype[shape] per input); each file "
    "gets those it defines. Without any, verify infers entries (a Defun's dtypes, the parameters of functions "
    "holding legacy sites) and says what it could not infer.")
_SCENARIOS = flags.DEFINE_list("scenarios", None, "With --verify: the scenarios to compare (`forward` for the outputs, "
                               "engine scenarios as in compat-check --list). Default: all.")
_EXCLUDE = flags.DEFINE_multi_string("exclude", [], "Glob of paths to skip; repeatable or comma-separated.")
_DEFAULT_EXCLUDES = flags.DEFINE_bool("default_excludes", True, DEFAULT_EXCLUDES_HELP)
_MAX_FILE_BYTES = flags.DEFINE_integer("max_file_bytes", DEFAULT_MAX_FILE_BYTES, "Larger files are skipped.",
                                       lower_bound=1)
_PROGRESS = flags.DEFINE_bool("progress", None, "Show a progress bar on stderr (default: only on a terminal).")
_SHARD = flags.DEFINE_string(
    "shard", None, "K/N: rewrite (and --verify) only shard K (1-based) of N of the files walked, in walk order: "
    "file i goes to shard i mod N, or balanced by --durations. Allowed with or without --verify and --in-place; "
    "tree-wide facts (gradients registered in one file and used in another, C++ ops) still come from every file, "
    "so each file's outcome is the whole run's. Join the shards' --format=json reports with compat-merge.")
_DURATIONS = flags.DEFINE_string(
    "durations", None, "With --shard: a JSON report of an earlier compat-rewrite run (whole, merged or a "
    "shard's; its `units` hold each file's seconds): longest file first onto the least loaded shard.")

# absl spells boolean flags with underscores; accept the documented `--in-place` too.
_ALIASES = {"--in-place": "--in_place", "--noin-place": "--noin_place"}
_STOPPING_SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name))


def _diff(result: FileResult) -> str:
    return "".join(difflib.unified_diff(
        result.original.splitlines(keepends=True), result.rewritten.splitlines(keepends=True),
        fromfile=_shown(result.path, "a"), tofile=_shown(result.path, "b")))


def _shown(path: str, side: str) -> str:
    return path if os.path.isabs(path) else f"{side}/{path}"


def _write_diff(text: str) -> None:
    """The diff on stdout with file names as their exact bytes (as `patch` needs), even those that are not UTF-8."""
    buffer = getattr(sys.stdout, "buffer", None)
    if buffer is None:  # a text-only stream (a test's capture)
        sys.stdout.write(text)
        return
    sys.stdout.flush()
    buffer.write(text.encode(sys.stdout.encoding or "utf-8", "surrogateescape"))
    buffer.flush()


def _entries() -> Any:
    """--entries parsed (None when not given); a malformed value, or an unknown --scenarios name, is a usage error
    saying the format."""
    from compat.verify import EntriesError, parse_entries

    try:
        entries = parse_entries(_ENTRIES.value) if _ENTRIES.value is not None else None
    except EntriesError as e:
        raise app.UsageError(flag_message(e), exitcode=EXIT_USAGE) from None
    if _SCENARIOS.value is not None:
        from compat.verify._runner import check_scenarios

        import_tensorflow_quietly()
        try:
            check_scenarios(_SCENARIOS.value)
        except ValueError as e:
            raise app.UsageError(flag_message(e), exitcode=EXIT_USAGE) from None
    return entries


def _verify(results: Sequence[FileResult], entries: Any, seconds: dict[str, float]) -> dict[str, Any]:
    """Each proposed rewrite against its file as it is on disk (never yet written); its seconds added to the
    file's in `seconds`."""
    from compat.verify import verify_rewrite

    reports: dict[str, Any] = {}
    for result in results:
        if result.status == "rewritten" and not result.written:
            started = time.monotonic()
            try:
                reports[result.path] = verify_rewrite(os.path.abspath(result.path), result.rewritten,
                                                      _entries_for(result.original, entries),
                                                      scenarios=_SCENARIOS.value)
            except Exception as e:  # noqa: BLE001 - one file's failure is its result, not the end of the run
                reports[result.path] = f"verification could not run: {type(e).__name__}: {e}"
            seconds[result.path] = seconds.get(result.path, 0.0) + time.monotonic() - started
    return reports


def _entries_for(source: str, entries: Any) -> Any:
    """The --entries this file defines a module-level function for, unless it declares its own (they win);
    None lets verify read the declaration or infer entries."""
    import ast

    from compat.verify._entries import declares_entries

    if entries is None or declares_entries(source):
        return None
    try:
        defined = {node.name for node in ast.parse(source).body if isinstance(node, ast.FunctionDef)}
    except SyntaxError:
        return None
    return {name: spec for name, spec in entries.items() if name in defined} or None


def _write_proven(results: list[FileResult], verified: dict[str, Any]) -> list[FileResult]:
    """--in-place --verify: write the rewrites verify proved; the others are skipped, their files untouched."""
    written = []
    for result in results:
        if result.path in verified and not report.verified(verified[result.path]):
            result = dataclasses.replace(result, status="skipped",
                                         reason="not written: --verify did not prove the rewrite equivalent")
        written.append(write_result(result, _MAX_FILE_BYTES.value))
    return written


def exit_code(results: Sequence[FileResult]) -> int:
    """3 some files skipped or failed; else 4 TODO sites remain; else 1 changes proposed or made; else 0."""
    return report.exit_code_of([r.as_dict() for r in results])


class _Stopped(BaseException):
    """A signal (SIGTERM, SIGHUP) stops the run: raised in its handler, so the file being written is cleaned up."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


@contextlib.contextmanager
def _signals_stop_the_run() -> Iterator[None]:
    def stop(signum: int, frame: object) -> None:
        raise _Stopped(signum)

    previous = {signum: signal.signal(signum, stop) for signum in _STOPPING_SIGNALS}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _paths(argv: Sequence[str]) -> list[str]:
    paths = list(argv[1:])
    if not paths:
        raise app.UsageError("give at least one file or directory to rewrite, e.g. `compat-rewrite src/`",
                             exitcode=EXIT_USAGE)
    missing = [p for p in paths if not os.path.lexists(p)]
    if missing:
        raise app.UsageError(f"no such file or directory: {', '.join(missing)}", exitcode=EXIT_USAGE)
    if not _VERIFY.value and (_ENTRIES.value is not None or _SCENARIOS.value is not None):
        raise app.UsageError("--entries and --scenarios only apply with --verify (they choose what verify runs)",
                             exitcode=EXIT_USAGE)
    return paths


def _selection(paths: list[str]) -> Any:
    """--shard as `rewrite_paths`' `select`: this shard's files of those walked (None: every file)."""
    if _SHARD.value is None:
        return None
    shard = _shard()
    durations = load_durations(_DURATIONS.value, "--durations", "compat-rewrite") if _DURATIONS.value else None

    def select(files: list[str]) -> list[str]:
        labels = [display_path(path) for path in files]
        return [files[i] for i in split(labels, shard.count, durations)[shard.index - 1]]
    return select


def _shard() -> Shard:
    try:
        return parse_shard(_SHARD.value or "", "--shard")
    except ValueError as e:
        raise app.UsageError(str(e), exitcode=EXIT_USAGE) from None


def _rewrite(paths: list[str], excluded: list[str], seconds: dict[str, float], walked: list[str],
             chosen: Any) -> list[FileResult]:
    """This run's (shard's) results, each file's seconds in `seconds`, every file walked in `walked`; the
    directories the default excludes kept the walk out of are added to `excluded`."""
    excludes = [p.strip() for value in _EXCLUDE.value for p in value.split(",") if p.strip()]
    defaults = _DEFAULT_EXCLUDES.value
    progress = progress_on_stderr("compat-rewrite", _PROGRESS.value, lines_by_default=False)

    def select(files: list[str]) -> list[str]:
        walked.extend(files)
        mine = chosen(files) if chosen else files
        if progress:
            progress.start(len(mine), "files")
        return mine
    clock = [time.monotonic()]

    def on_file(result: FileResult) -> None:
        now = time.monotonic()
        seconds[result.path], clock[0] = now - clock[0], now
        if progress:
            progress.advance(result.path)
    try:
        return list(rewrite_paths(paths, in_place=_IN_PLACE.value and not _VERIFY.value, excludes=excludes,
                                  default_excludes=defaults, max_file_bytes=_MAX_FILE_BYTES.value,
                                  on_file=on_file, on_default_excluded=excluded.append, select=select))
    finally:
        if progress:
            progress.close()


def _run_flags(paths: Sequence[str]) -> dict[str, Any]:
    """The flags that shape the results (not --shard, --durations, --format or --progress), and their fingerprint."""
    values = {"paths": list(paths), "in_place": _IN_PLACE.value, "verify": _VERIFY.value, "entries": _ENTRIES.value,
              "scenarios": _SCENARIOS.value, "exclude": list(_EXCLUDE.value),
              "default_excludes": _DEFAULT_EXCLUDES.value, "max_file_bytes": _MAX_FILE_BYTES.value}
    return {"flags": values, "fingerprint": fingerprint(values)}


def _document(results: Sequence[FileResult], verified: dict[str, Any], excluded: Sequence[str],
              paths: Sequence[str], seconds: dict[str, float], walked: Sequence[str]) -> dict[str, Any]:
    """The run's JSON document; the text report is rendered from it (apps/_tool_text.py)."""
    files = [r.as_dict() for r in results]
    document: dict[str, Any] = {
        "tool": "compat-rewrite", "version": __version__, "in_place": _IN_PLACE.value, "run": _run_flags(paths),
        "summary": report.summary_of(files), "exit_code": report.exit_code_of(files, verified),
        "default_excluded": [display_path(path) for path in excluded], "files": files,
        "units": [{"file": display_path(r.path), "seconds": round(seconds.get(r.path, 0.0), 3)} for r in results]}
    if not _IN_PLACE.value:
        document["diffs"] = {display_path(r.path): _diff(r) for r in results if r.status in ("rewritten", "todo")}
    if verified:
        document["verify"] = {display_path(path): _as_json(result) for path, result in verified.items()}
    if _SHARD.value is not None:
        shard = _shard()
        document["shard"] = {"index": shard.index, "count": shard.count,
                             "files": [display_path(path) for path in walked]}
    return document


def main(argv: Sequence[str]) -> int:
    paths = _paths(argv)
    if _SHARD.value is not None:
        _shard()
    if _DURATIONS.value is not None and _SHARD.value is None:
        raise app.UsageError("--durations only applies with --shard (it balances the shards)", exitcode=EXIT_USAGE)
    entries = _entries() if _VERIFY.value else None
    excluded: list[str] = []
    seconds: dict[str, float] = {}
    walked: list[str] = []
    try:
        chosen = _selection(paths)  # a bad --durations file is a usage error before any work
    except ValueError as e:
        raise app.UsageError(str(e), exitcode=EXIT_USAGE) from None
    try:
        with _signals_stop_the_run():
            results = _rewrite(paths, excluded, seconds, walked, chosen)
            verified = _verify(results, entries, seconds) if _VERIFY.value else {}
            if _VERIFY.value and _IN_PLACE.value:
                results = _write_proven(results, verified)
    except _Stopped as stopped:
        sys.stderr.write(f"compat-rewrite: stopped by {signal.Signals(stopped.signum).name}: the files written "
                         "so far are complete, the one being written was left as it was\n")
        return 128 + stopped.signum
    document = _document(results, verified, excluded, paths, seconds, walked)
    if _FORMAT.value == "json":
        sys.stdout.write(json.dumps(document, indent=2) + "\n")
        sys.stderr.write(summary_line(document["summary"]) + not_proven_line(document))
    else:
        out, err = rewrite_text(document)
        _write_diff(out)
        sys.stderr.write(err)
    code: int = document["exit_code"]
    return code


def _as_json(result: Any) -> Any:
    """A VerifyReport's JSON document (`to_json`), or why verification could not run."""
    return result.to_json() if hasattr(result, "to_json") else str(result)


def run() -> None:
    """Console-script entry point (`compat-rewrite`)."""
    sys.argv = [_ALIASES.get(a, a) for a in sys.argv]
    run_app(main, __name__, "compat-rewrite")


if __name__ == "__main__":
    run()
