"""compat-check: run custom gradients through every mechanism, context and scenario, and compare.

With no flags it runs the whole built-in catalogue. Exit codes: 0 every native variant agrees with the
reference, 1 an unexpected difference exists, 2 a usage error (unknown spec, scenario, variant or dtype, with
the closest valid name; a spec file that does not load; a --loss that cannot work).

    compat-check
    compat-check --specs=scaled_ste,my_ops.py:MY_SPEC --scenarios=sum,gather --format=html --output=r.html
    compat-check --specs=my_ops.py:MY_SPEC --loss='tf.reduce_sum(y * 3.0)' --show=upstream
    compat-check --quiet   # CI: the verdict and the unexpected cells only
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from absl import app, flags, logging

from compat._exit_guard import exits_raised
from compat.apps._common import (
    EXIT_USAGE,
    import_tensorflow_quietly,
    prepare_output,
    run_app,
    stdout_kept_for_report,
    tensorflow_chatter_wanted,
)
from compat.apps._flag_text import flag_message
from compat.apps._output import write_output
from compat.apps._progress import Progress, progress_on_stderr
from compat.comparison import DEFAULT_REFERENCE
from compat.references import DEFAULT_REFERENCES

if TYPE_CHECKING:
    from compat.checker import CheckReport
    from compat.reports.view import View
    from compat.sharding import Shard

_FORMATS = ["table", "json", "markdown", "html"]

SPECS = flags.DEFINE_list(
    "specs", None, "Catalogue names, path/to/file.py[:NAME] or package.module:NAME (NAME: a GradientSpec, a "
    "list of them, or a function returning either). Default: the whole catalogue.")
SCENARIOS = flags.DEFINE_list("scenarios", None, "Downstream scenarios to run. Default: all.")
VARIANTS = flags.DEFINE_list(
    "variants", None, "mechanism@context variants (globs like custom_gradient@* or *@eager_tape). Default: all but "
    "the distributed contexts (mirrored_tape, mirrored_v1, multi_worker), which run only when named, e.g. "
    "--variants='*@mirrored_tape'.")
DTYPES = flags.DEFINE_list("dtypes", ["float32"], "Floating dtypes: float32, float64, float16, bfloat16.")
REFERENCE = flags.DEFINE_string("reference", DEFAULT_REFERENCE, "The variant every cell is compared with.")
REFERENCES = flags.DEFINE_list(
    "references", list(DEFAULT_REFERENCES), "References that are the forward itself, each cell's "
    "gradient compared with them to show what the custom gradient changes (never failing the check): autodiff "
    "(TensorFlow's own gradient of the forward), finite_difference (central differences in float64). "
    "--references= computes none.")
FORMAT = flags.DEFINE_enum("format", "table", _FORMATS, "Report format.")
OUTPUT = flags.DEFINE_string(
    "output", None, "Write the report to this file instead of stdout: checked before the run; a regular file is "
    "replaced atomically, a device or FIFO written as it is, a symlink's target replaced.")
PROGRESS = flags.DEFINE_bool(
    "progress", None, "Progress on stderr: a bar with elapsed time and ETA on a terminal, else a line per phase "
    "and every 10 s (the default); --noprogress shows none.")
MAX_ARRAY_ELEMENTS = flags.DEFINE_integer(
    "max_array_elements", None, "JSON and HTML embed arrays of at most this many elements and summarise larger "
    "ones (shape, dtype, min/max/mean, first values, sha256); 0 embeds every array. Default: 1000.",
    lower_bound=0)
SHOW = flags.DEFINE_enum(
    "show", "all", ["all", "upstream"], "table and markdown: `upstream` prints only what each gradient function "
    "received (per spec and scenario, the distinct upstreams and the variants that received them).")
ONLY_DIFFERENCES = flags.DEFINE_bool(
    "only_differences", False, "Leave out scenarios where every variant agrees with its reference (table, "
    "markdown; the HTML page starts with its filter ticked).")
DETAILS = flags.DEFINE_bool(
    "details", False, "table: print every section of the report (each spec's symbol matrix, every upstream "
    "received, every pitfall and error) instead of the one-screen summary. Reports written with --output, and "
    "--show=upstream, --only_differences and --quiet, are whole views already.")
QUIET = flags.DEFINE_bool("quiet", False, "For CI: print only the verdict and the unexpected cells (table, markdown).")
LOSS = flags.DEFINE_string(
    "loss", None, "Your own downstream, run as the scenario `custom`: a Python expression in y (the first output) "
    "and outputs (all of them), with tf and np in scope, e.g. 'tf.reduce_sum(y * 3.0)'; or path/to/file.py:NAME, "
    "a callable loss(*outputs) -> tensor (or a compat.Downstream). The expression runs as Python code. Alone it "
    "replaces the built-in scenarios; with --scenarios, `custom` is run after them.")
JOBS = flags.DEFINE_integer(
    "jobs", None, "Worker processes running the specs (each imports TensorFlow once; the report is the same as "
    "with one). Default: the CPUs this process may use; 1 runs everything in this process, as before.",
    lower_bound=1)
EXECUTOR = flags.DEFINE_enum(
    "executor", "local", ["local", "dask"], "Where the units run: `local`, --jobs worker processes of this machine; "
    "`dask`, a Dask distributed cluster (pip install 'gradcompat[dask]'): the one at --scheduler, else a "
    "LocalCluster of --jobs worker processes. The report is the same.")
SCHEDULER = flags.DEFINE_string(
    "scheduler", None, "With --executor=dask: the address of a running Dask scheduler (tcp://host:8786), whose "
    "workers can import gradcompat and your spec files. Default: a LocalCluster started for the run.")
SHARD = flags.DEFINE_string(
    "shard", None, "K/N: run only shard K (1-based) of N of the (spec, dtype) units, a split every shard computes "
    "alike, e.g. one CI job per shard; merge the shards' JSON reports with compat-merge (or python -m "
    "compat.releases). Balanced by --durations, else by count.")
DURATIONS = flags.DEFINE_string(
    "durations", None, "A JSON report of an earlier run (whole, merged or a shard's): its units' recorded seconds "
    "balance --shard (longest first onto the least loaded shard); units it does not list count as its mean.")
LIST = flags.DEFINE_bool(
    "list", False, "List the specs (those --specs names, else the catalogue), scenarios, variants and dtypes, then "
    "exit.")


def _usage_error(message: str) -> app.UsageError:
    return app.UsageError(message, exitcode=EXIT_USAGE)


def _listing() -> str:
    """The specs `--specs` names (default: the catalogue and its opt-in specs), scenarios, variants, dtypes."""
    from compat.contexts import ALL_CONTEXTS
    from compat.dtypes import DTYPES
    from compat.references import REFERENCES as REFERENCES_REGISTRY
    from compat.scenarios import SCENARIOS
    from compat.variants import NATIVE_VARIANTS, OPT_IN_VARIANTS, VARIANTS

    lines = _spec_listing()
    lines += ["scenarios:"] + [f"  {name}: {scenario.description}" for name, scenario in SCENARIOS.items()]
    lines += ["  custom: your own loss, given with --loss"]
    lines += ["variants (* = native):"] + [f"  {'*' if v in NATIVE_VARIANTS else ' '} {v}" for v in VARIANTS]
    lines += ["opt-in variants (they multiply a run's time: run only when named, e.g. --variants='*@jacobian_pfor'):"]
    lines += [f"    {v}" for v in OPT_IN_VARIANTS]
    lines += ["contexts:"] + [f"  {name}{' (opt-in)' if context.opt_in else ''}: {context.summary}"
                              for name, context in ALL_CONTEXTS.items()]
    lines += ["dtypes: " + ", ".join(DTYPES)]
    lines += ["references (the forward itself; --references, both by default):"]
    lines += [f"  {name}: {reference.description}" for name, reference in REFERENCES_REGISTRY.items()]
    return "\n".join(lines) + "\n"


def _spec_listing() -> list[str]:
    from compat.catalogue import CATALOGUE, FORMS, FORMS_GROUP

    if SPECS.value:
        from compat.loading import SpecLoadError, load_specs

        try:
            with exits_raised():
                specs = load_specs(SPECS.value)
        except SpecLoadError as exc:
            raise _usage_error(exc.naming("--specs")) from None
        return [f"specs (--specs={','.join(SPECS.value)}):"] + [
            f"  {spec.name}: {spec.description}" if spec.description else f"  {spec.name}" for spec in specs]
    lines = ["specs (catalogue):"] + [f"  {name}: {factory().description}" for name, factory in CATALOGUE.items()]
    lines += [f"opt-in specs (run when named, `--specs={FORMS_GROUP}` for all):"]
    return lines + [f"  {name}: {factory().description}" for name, factory in FORMS.items()]


class _CheckProgress:
    """Adapts the checker's progress callback, `(done, total, label)`, to the app's progress display."""

    def __init__(self, progress: Progress) -> None:
        self.progress, self.done = progress, 0
        self.total: int | None = None

    def __call__(self, done: int, total: int, label: str) -> None:
        if self.total is None:
            self.total = total
            self.progress.start(total, "spec x dtype")
        if done == 0:
            self.progress.phase(label)
        elif done > self.done:
            self.progress.advance(label, steps=done - self.done)
            self.done = done


def main(argv: list[str]) -> int:
    if len(argv) > 1:
        raise _usage_error(f"unexpected arguments {argv[1:]}; use --specs=... to name specs")
    if OUTPUT.value:
        prepare_output(OUTPUT.value)
    sharding = _sharding()
    progress = None if LIST.value else progress_on_stderr("compat-check", PROGRESS.value)
    try:
        return _check(progress, *sharding)
    finally:
        if progress:
            progress.close()


def _check(progress: Progress | None, shard: Shard | None, durations: Mapping[str, float] | None) -> int:
    if progress:
        progress.phase("importing TensorFlow")
    import_tensorflow_quietly()
    from compat.registry import needs_logical_cpus

    if needs_logical_cpus(VARIANTS.value or ()):
        from compat.distribute import use_logical_cpus

        use_logical_cpus()  # before any op; if it cannot, the mirrored cells say why (unsupported)
    with stdout_kept_for_report() as report_stream:
        if LIST.value:
            report_stream.write(_listing())
            return 0
        view = _view()
        with exits_raised():  # os._exit in user code here (a --loss file, a spec, --jobs=1) is no silent pass
            report = dataclasses.replace(_run_check(progress, shard, durations), run=run_flags())
        if progress:
            progress.close()  # the bar is gone before the report is printed on the same terminal
        from compat.reports import render
        from compat.reports.json_report import DEFAULT_MAX_ARRAY_ELEMENTS

        limit = DEFAULT_MAX_ARRAY_ELEMENTS if MAX_ARRAY_ELEMENTS.value is None else MAX_ARRAY_ELEMENTS.value
        text = render(report, FORMAT.value, max_array_elements=limit, view=view)
        if OUTPUT.value:
            write_output(OUTPUT.value, text)
            logging.info("wrote %s report to %s", FORMAT.value, OUTPUT.value)
        else:
            report_stream.write(text if text.endswith("\n") else text + "\n")
    if report.exit_code:
        logging.warning("%d unexpected difference(s) in native variants", len(report.unexpected))
    return report.exit_code


def _view() -> View:
    """The report options, checked against --format before anything runs."""
    from compat.reports.view import View

    text_only = [name for name, used in (("--quiet", QUIET.value), ("--show=upstream", SHOW.value == "upstream"))
                 if used]
    if text_only and FORMAT.value not in ("table", "markdown"):
        raise _usage_error(f"{' and '.join(text_only)} applies to --format=table or markdown, not {FORMAT.value}")
    if ONLY_DIFFERENCES.value and FORMAT.value == "json":
        raise _usage_error("--only_differences applies to table, markdown and html; JSON is always whole")
    if DETAILS.value and FORMAT.value != "table":
        raise _usage_error(f"--details applies to --format=table; {FORMAT.value} reports are always whole")
    whole = DETAILS.value or bool(OUTPUT.value) or ONLY_DIFFERENCES.value or SHOW.value == "upstream"
    return View(show="upstream" if SHOW.value == "upstream" else "all", only_differences=ONLY_DIFFERENCES.value,
                quiet=QUIET.value, summary=not whole)


CELL_FLAGS = ("specs", "scenarios", "variants", "dtypes", "reference", "loss", "max_array_elements")
"""The flags that shape a report's cells (not --jobs, --output, --progress, --format...): shards merge only when
they agree."""


def run_flags() -> dict[str, Any]:
    """The report's `run`: CELL_FLAGS' values and their fingerprint."""
    from compat.sharding import fingerprint

    values = {name: flags.FLAGS[name].value for name in CELL_FLAGS}
    return {"flags": values, "fingerprint": fingerprint(values)}


def _sharding() -> tuple[Shard | None, Mapping[str, float] | None]:
    """--shard and --durations, checked before anything runs."""
    from compat.sharding import load_durations, parse_shard

    if DURATIONS.value and not SHARD.value:
        raise _usage_error(f"--durations={DURATIONS.value} balances --shard=K/N: give --shard too, or drop it")
    try:
        shard = parse_shard(SHARD.value, "--shard") if SHARD.value else None
        return shard, load_durations(DURATIONS.value, "--durations") if DURATIONS.value else None
    except ValueError as exc:
        raise _usage_error(str(exc)) from None


def _run_check(progress: Progress | None, shard: Shard | None = None,
               durations: Mapping[str, float] | None = None) -> CheckReport:
    """Load the specs and run the matrix; any user code that runs here may print, but not to the report."""
    from compat.apps._loss import LossError, try_loss
    from compat.apps._names import check_names
    from compat.apps._request import CheckRequest
    from compat.loading import SpecLoadError
    from compat.references import select_references

    try:
        check_names(SPECS.value, SCENARIOS.value, VARIANTS.value, REFERENCE.value)
        select_references(REFERENCES.value)
    except ValueError as exc:
        raise _usage_error(flag_message(exc)) from None
    request = CheckRequest(tuple(SPECS.value) if SPECS.value else None,
                           tuple(SCENARIOS.value) if SCENARIOS.value else None, LOSS.value or None)
    if progress:
        progress.phase("loading specs")
    try:
        specs, scenarios, loss = request.load()
        if loss is not None:
            try_loss(request.loss or "", loss, specs)
    except SpecLoadError as exc:
        raise _usage_error(exc.naming("--specs")) from None
    except LossError as exc:
        raise _usage_error(str(exc)) from None
    try:
        return _executor()(request, dtypes=DTYPES.value, variants=VARIANTS.value, reference=REFERENCE.value,
                           jobs=JOBS.value, progress=_CheckProgress(progress) if progress else None,
                           quiet_import=not tensorflow_chatter_wanted(),
                           loaded=(specs, scenarios), shard=shard, durations=durations,
                           references=REFERENCES.value)
    except ValueError as exc:  # unknown scenario, dtype or variant: the message lists the valid names
        raise _usage_error(flag_message(exc)) from None


def _executor() -> Callable[..., CheckReport]:
    """check_in_workers, or with --executor=dask check_on_dask (a usage error if Dask is not installed)."""
    if EXECUTOR.value == "local":
        if SCHEDULER.value:
            raise _usage_error(f"--scheduler={SCHEDULER.value} is a Dask scheduler: add --executor=dask")
        from compat.workers import check_in_workers

        return check_in_workers
    from compat.dask_executor import DaskUnavailable, check_on_dask, require_dask

    try:
        require_dask()
    except DaskUnavailable as exc:
        raise _usage_error(f"--executor=dask: {exc}") from None
    return functools.partial(check_on_dask, scheduler=SCHEDULER.value)


def run() -> None:
    """Console-script entry point (`compat-check`)."""
    run_app(main, __name__, "compat-check")


if __name__ == "__main__":
    run()
