"""What every gradcompat absl app shares: exit codes, safe output, quiet TensorFlow import, the runner."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import NoReturn, TextIO

from absl import app, flags, logging

from compat._quiet_import import import_tensorflow_hiding_chatter
from compat.apps._output import OutputError, check_output_path
from compat.audit.walker import DEFAULT_EXCLUDES, VIRTUALENV_MARKER

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE = 0, 1, 2
DEFAULT_EXCLUDES_HELP = (
    "Skip directories found in a walk that are named " + ", ".join(DEFAULT_EXCLUDES) + f", or hold {VIRTUALENV_MARKER}"
    " (a virtualenv): version control, installed packages, build output. A directory named on the command line "
    "is always walked (without these defaults if it is one of them); --nodefault_excludes walks everything.")
"""The help of `--default_excludes` (compat-audit, compat-rewrite)."""


def prepare_output(path: str) -> None:
    """Before a run: create `--output`'s missing parent directories and check the path can be written.

    Raises OutputError naming the path (run_app turns it into exit 2), so nothing is computed for a report
    that could not be saved.
    """
    try:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    except OSError:
        pass  # check_output_path says what is wrong with the path
    check_output_path(path)


EXIT_INTERRUPTED = 130


@contextlib.contextmanager
def stdout_kept_for_report() -> Iterator[TextIO]:
    """Yield the stream the report goes to (today's stdout); inside the block, anything else written to
    stdout (a user's print, C code writing to fd 1) goes to stderr, so `--format=json` output stays valid."""
    report: TextIO = sys.stdout
    saved_fd = None
    try:
        fd = report.fileno()
    except (AttributeError, OSError, ValueError):  # not a real file (e.g. captured by a test): Python-level only
        fd = None
    report.flush()
    if fd is not None:
        saved_fd = os.dup(fd)
        report = os.fdopen(os.dup(saved_fd), "w", encoding="utf-8", errors="surrogateescape")
        os.dup2(sys.stderr.fileno(), fd)
    previous, sys.stdout = sys.stdout, sys.stderr
    try:
        yield report
    finally:
        report.flush()
        sys.stdout = previous
        if saved_fd is not None:
            report.close()
            os.dup2(saved_fd, fd)  # type: ignore[arg-type]
            os.close(saved_fd)


def tensorflow_chatter_wanted() -> bool:
    """Whether `--verbosity=0` (INFO) or more asks to see TensorFlow's start-up chatter."""
    return bool(flags.FLAGS["verbosity"].present and logging.get_verbosity() >= logging.INFO)


def import_tensorflow_quietly() -> None:
    """Import TensorFlow with its start-up chatter hidden, unless `--verbosity=0` (INFO) or more is given.

    TensorFlow 2.21 prints its oneDNN notice (twice) from C++ while importing, whatever TF_CPP_MIN_LOG_LEVEL
    says, so the process's stderr is redirected to a temporary file for the import; if the import fails,
    what it printed is replayed before the error.
    """
    if "tensorflow" in sys.modules or tensorflow_chatter_wanted():
        import tensorflow  # noqa: F401
        return
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import_tensorflow_hiding_chatter()
_HELP_FLAGS = ("--help", "-help", "-h", "-?", "--helpshort", "-helpshort", "--helpfull", "-helpfull")


def run_app(main: Callable[[list[str]], int], module_name: str, program: str) -> None:
    """app.run(main) for console scripts: --help exits 0, usage errors are one line and exit 2, Ctrl-C exits 130.

    Every usage error (a bad flag, or `app.UsageError` from `main`) prints `program: message` and a pointer to
    --help on stderr, not absl's whole flag listing.
    """
    # Under a console script the main module is the generated wrapper, so absl would list no flags in --help.
    for flag in flags.FLAGS.get_key_flags_for_module(module_name):
        flags.FLAGS.register_key_flag_for_module(sys.argv[0], flag)
    main_module = sys.modules.get("__main__")
    if main_module is not None and not main_module.__doc__:
        main_module.__doc__ = sys.modules[module_name].__doc__

    def usage_error(message: object) -> NoReturn:
        sys.stderr.write(f"{program}: {message}\nsee `{program} --help`\n")
        sys.exit(EXIT_USAGE)

    def parse(argv: Sequence[str]) -> list[str]:
        wanted = [arg.split("=", 1)[0] for arg in argv[1:] if arg.split("=", 1)[0] in _HELP_FLAGS]
        if wanted:
            app.usage(shorthelp="full" not in wanted[0], writeto_stdout=True)
            sys.exit(EXIT_OK)
        try:
            return flags.FLAGS(list(argv))
        except flags.Error as error:
            usage_error(error)

    def guarded_main(argv: list[str]) -> int:
        try:
            return main(argv)
        except app.UsageError as error:
            usage_error(error)
        except OutputError as error:
            sys.stderr.write(f"{program}: {error}\n")
            return EXIT_USAGE
        except KeyboardInterrupt:
            sys.stderr.write(f"\n{program}: interrupted\n")
            return EXIT_INTERRUPTED

    app.run(guarded_main, flags_parser=parse)
