"""The child process of compat.verify: import one side's module, run every entry and scenario, write results.

    python -m compat.verify._child --side=original|rewritten --module=PATH --job_dir=DIR [--path=DIR ...]

The original side runs with `tensorflow` seen as `tensorflow.compat.v1` (v2 behaviour disabled) in the
v1_session context only; the rewritten side runs in TF2, in every context the job names. Results go to
DIR/<side>.json and DIR/<side>.npz; the exit status is 0 whenever they were written.
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
import traceback
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from compat.verify._results import FORWARD, ORIGINAL_CONTEXT, Attempt, Job, SideResult, read_job, write_side
_MESSAGE_LIMIT = 600


def describe(exc: BaseException) -> str:
    """`Type: message`, shortened: TensorFlow errors carry whole graphs in their messages."""
    text = f"{type(exc).__name__}: {exc}".strip()
    return text if len(text) <= _MESSAGE_LIMIT else text[:_MESSAGE_LIMIT] + " ..."


def run_side(side: str, module_path: str, job: Job, extra_paths: Sequence[str] = ()) -> SideResult:
    """Import the module of `side` and run every entry of `job`; failures become results, never exceptions."""
    import tensorflow as tf

    from compat.scenarios import select_scenarios
    from compat.verify._legacy import import_path, install_legacy_tensorflow
    from compat.verify._record import Recorder, instrument_custom_gradient, instrument_legacy

    import compat.contexts  # noqa: F401 - gradcompat's modules bind the real TF2 module before the swap

    version = tf.__version__
    scenarios = select_scenarios(list(job.scenarios) if job.scenarios is not None else None)
    names = tuple(scenario.name for scenario in scenarios)
    recorder = Recorder()
    if side == "original":
        install_legacy_tensorflow()
        instrument_legacy(recorder)
        contexts: tuple[str, ...] = (ORIGINAL_CONTEXT,)
    else:
        instrument_custom_gradient(recorder)
        contexts = job.contexts
    try:
        module = import_path(module_path, side, tuple(extra_paths))
    except BaseException as exc:  # noqa: BLE001 - SystemExit in user code is a result too
        return SideResult(side, error=f"importing {module_path} raised {describe(exc)}\n"
                                      f"{_traceback_tail(exc)}", tensorflow=version, scenarios=names)
    result = SideResult(side, tensorflow=version, scenarios=names)
    for entry in job.entries:
        try:
            _run_entry(result, module, entry, job.inputs[entry], scenarios, contexts, recorder)
        except BaseException as exc:  # noqa: BLE001
            result.entry_errors[entry] = f"`{entry}` raised {describe(exc)}"
    return result


def _traceback_tail(exc: BaseException, lines: int = 6) -> str:
    return "".join(traceback.format_exception(exc)[-lines:]).rstrip()


def _run_entry(result: SideResult, module: Any, entry: str, inputs: tuple[np.ndarray, ...], scenarios: Sequence[Any],
               contexts: Sequence[str], recorder: Any) -> None:
    from compat.contexts import CONTEXTS, Case

    function = getattr(module, entry, None)
    if not callable(function):
        result.entry_errors[entry] = (f"{module.__file__} defines no function `{entry}`; the entries name "
                                      f"functions of the original that the rewritten module must keep")
        return

    def op(*tensors: Any) -> tuple[Any, ...]:
        outputs = function(*tensors)
        return tuple(outputs) if isinstance(outputs, (list, tuple)) else (outputs,)

    recorder.current = None  # nothing is attributed to a case until a context builds one
    for context in contexts:
        result.attempts[(entry, context, FORWARD)] = _forward(context, op, inputs)
    try:
        signature = _signature(op, inputs, [result.attempts[(entry, context, FORWARD)] for context in contexts])
    except Exception as exc:  # noqa: BLE001
        result.entry_errors[entry] = f"building `{entry}` on placeholders raised {describe(exc)}"
        return
    for context in contexts:
        cases, keys = [], []
        for scenario in scenarios:
            key = (entry, context, scenario.name)
            reason = scenario.skip_reason_for(signature)
            if reason is not None:
                result.attempts[key] = Attempt("skipped", reason)
                continue
            keys.append(key)
            cases.append(Case(build=_building(recorder, key, op), inputs=inputs,
                              downstream=scenario.downstream_for(signature),
                              before_run=functools.partial(recorder.reset, key)))
        try:
            outcomes = CONTEXTS[context].run(cases)
        except BaseException as exc:  # noqa: BLE001 - e.g. SystemExit from the entry, which contexts let through
            for key in keys:
                result.attempts[key] = Attempt("error", f"running the {context} context raised {describe(exc)}")
            continue
        for key, outcome in zip(keys, outcomes, strict=True):
            if outcome.error is not None:
                where = "while building" if outcome.phase == "build" else "while running"
                result.attempts[key] = Attempt("error", f"{where}: {describe(outcome.error)}",
                                               calls=recorder.calls(key))
            else:
                result.attempts[key] = Attempt("ok", values=tuple(outcome.input_grads or ()),
                                               calls=recorder.calls(key))


def _building(recorder: Any, key: tuple[str, str, str], op: Callable[..., Any]) -> Callable[[], Any]:
    """A Case's `build`: contexts call it right before taking that case's gradient, so every gradient function
    built from then on belongs to this case."""
    def build() -> Callable[..., Any]:
        recorder.current = key
        return op

    return build


def _signature(op: Callable[..., tuple[Any, ...]], inputs: tuple[np.ndarray, ...],
               forwards: Sequence[Attempt]) -> Any:
    """The outputs' dtypes and static shapes; dimensions unknown while building (a Defun's outputs have no
    static shape) are taken from the outputs actually computed, so the shape-dependent scenarios still run."""
    import tensorflow as tf

    from compat.signature import OutputSignature

    with tf.Graph().as_default():
        placeholders = [tf.compat.v1.placeholder(value.dtype, value.shape) for value in inputs]
        outputs = [tf.convert_to_tensor(output) for output in op(*placeholders)]
    computed = next((attempt.values for attempt in forwards if attempt.status == "ok"), ())
    shapes = []
    for index, output in enumerate(outputs):
        value = computed[index] if index < len(computed) else None
        actual = None if value is None else value.shape
        if output.shape.rank is None:
            shapes.append(None if actual is None else tuple(actual))
        elif actual is not None and len(actual) == output.shape.rank:
            shapes.append(tuple(d if d is not None else actual[i] for i, d in enumerate(output.shape.as_list())))
        else:
            shapes.append(tuple(output.shape.as_list()))
    return OutputSignature(dtypes=tuple(output.dtype for output in outputs), shapes=tuple(shapes))


def _forward(context: str, op: Callable[..., tuple[Any, ...]], inputs: tuple[np.ndarray, ...]) -> Attempt:
    """The entry's outputs computed the way `context` runs code: Session, eagerly, or in a tf.function."""
    import tensorflow as tf

    try:
        if context.startswith("v1_"):
            graph = tf.Graph()
            with graph.as_default():
                placeholders = [tf.compat.v1.placeholder(value.dtype, value.shape) for value in inputs]
                outputs = op(*placeholders)
                initialize = tf.compat.v1.global_variables_initializer()
            with tf.compat.v1.Session(graph=graph) as session:
                session.run(initialize)
                values = session.run(list(outputs), feed_dict=dict(zip(placeholders, inputs, strict=True)))
        elif context.startswith("function_"):
            values = [o.numpy() for o in tf.function(op, autograph=False)(*[tf.constant(v) for v in inputs])]
        else:
            values = [tf.convert_to_tensor(o).numpy() for o in op(*[tf.constant(v) for v in inputs])]
    except BaseException as exc:  # noqa: BLE001
        return Attempt("error", f"computing the outputs raised {describe(exc)}")
    return Attempt("ok", values=tuple(np.asarray(value) for value in values))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m compat.verify._child", description=__doc__.splitlines()[0])
    parser.add_argument("--side", choices=("original", "rewritten"), required=True)
    parser.add_argument("--module", required=True, help="the module file to import")
    parser.add_argument("--job_dir", required=True, help="holds job.json and inputs.npz; results are written here")
    parser.add_argument("--path", action="append", default=[], help="another directory to make importable")
    args = parser.parse_args(argv)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    result = run_side(args.side, args.module, read_job(args.job_dir), args.path)
    write_side(result, args.job_dir)
    return 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # threads user code started must not keep a finished child alive
