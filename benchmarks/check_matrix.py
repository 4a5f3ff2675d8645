"""Benchmark: the check matrix (`compat.matrix.check`) against the same gradients in bare TensorFlow, and
`compat-check` itself in one process and in worker processes.

Run: `python benchmarks/check_matrix.py [--repeats=3] [--dtypes=float32,float16] [--jobs=1,2] [--profile]`.

One process, in this one:
(a) *harness*: `compat.matrix.check` on every spec in CATALOGUE (found at run time), all scenarios, all
    variants, the default reference: probes, output signatures, validation, comparison, the report.
(b) *baseline*: the same gradient computations written as a user would, with no harness: for each spec x dtype
    x context, one tf.Graph + one Session.run (v1 contexts), one eager loop, or one traced tf.function called
    once, holding every mechanism x applicable scenario (Defun + grad_func, Defun + python_grad_func,
    RegisterGradient + gradient_override_map under a fresh name, tf.custom_gradient), the spec's `gradient`
    called directly. What TensorFlow refuses to build (Defun in eager...) is caught and skipped, as the
    harness reports it `unsupported`; a batch that fails at run time is searched for its failing cases by the
    harness's own strategy (see README).

The downstreams (`scenario.downstream(spec)`) and the output dtypes the Defun gradient needs are prepared once,
before timing: a user writes them by hand. Both sides are warmed up once, their order alternates across repeats,
and the target is harness / baseline <= 1.1 (best of repeats; wall and CPU seconds are printed).

Then `compat-check --format=json` in child processes, once per `--jobs` value (default 1 and the usable CPUs):
wall and CPU seconds, the peak RSS of every process (main, workers), how busy the most jobs keep the cores
(CPU seconds of the whole process tree / (wall seconds x jobs), target >= 0.9: the wall-time ratio against
--jobs=1, printed too, also counts each worker's own TensorFlow import, which no scheduling removes), and
whether the two JSON reports are equal. Every timing line carries the load average. Exit code 0 when every
target is met, 1 when one is missed, 2 when the baseline does not implement a mechanism or context of compat.
"""

from __future__ import annotations

import contextlib
import cProfile
import dataclasses
import gc
import io
import itertools
import json
import os
import pstats
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(_ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from _measure import Measured, load_average, measure  # noqa: E402
from absl import app, flags, logging  # noqa: E402
from tensorflow.python.framework import function  # noqa: E402

from compat.catalogue import CATALOGUE  # noqa: E402
from compat.contexts import CONTEXTS  # noqa: E402
from compat.downstream import Downstream  # noqa: E402
from compat.dtypes import DTYPES, cast_spec  # noqa: E402
from compat.matrix import CheckReport, check  # noqa: E402
from compat.mechanisms import MECHANISMS  # noqa: E402
from compat.scenarios import SCENARIOS  # noqa: E402
from compat.signature import output_signature  # noqa: E402
from compat.spec import GradientSpec  # noqa: E402
from compat.workers import usable_cpus  # noqa: E402

_REPEATS = flags.DEFINE_integer("repeats", 3, "Timed runs of each side; best and median are reported.",
                                lower_bound=1)
_DTYPES = flags.DEFINE_list("dtypes", ["float32"], f"The dtype axis, from {list(DTYPES)}.")
_SPECS = flags.DEFINE_list("specs", None, "Catalogue specs to run (default: the whole catalogue).")
_SCENARIOS = flags.DEFINE_list("scenarios", None, "Scenarios to run (default: all).")
_TARGET = flags.DEFINE_float("target", 1.1, "The one-process harness / baseline ratio to stay under.")
_ONE_PROCESS = flags.DEFINE_bool("one_process", True, "Time the harness against the baseline in this process.")
_APP = flags.DEFINE_bool("app", True, "Time compat-check itself in child processes, once per --jobs value.")
_JOBS = flags.DEFINE_list("jobs", None, "compat-check --jobs values to time (default: 1 and the usable CPUs).")
_APP_REPEATS = flags.DEFINE_integer("app_repeats", 1, "Timed compat-check runs per --jobs value (order alternates).",
                                    lower_bound=1)
_APP_BUSY = flags.DEFINE_float("app_busy", 0.9, "How busy compat-check --jobs=<most> must keep its cores: CPU "
                               "seconds / (wall seconds x jobs), at least.")
_PROFILE = flags.DEFINE_bool("profile", False, "After timing, run the harness once under cProfile and print "
                             "where its time goes.")
_VERIFY = flags.DEFINE_bool("verify", True, "Check (untimed) that the baseline computed the harness's gradients.")

Op = Callable[..., tuple[Any, ...]]
OpBuilder = Callable[[GradientSpec, Sequence[tf.DType]], Op]

# --------------------------------------------------------------------------------------------- the baseline
# Plain user code, one builder per mechanism (compare the docstrings of compat/mechanisms/*.py).

_fresh = itertools.count()


def _fresh_name(spec: GradientSpec) -> str:
    """TensorFlow's gradient registry is global: every registration needs a name never used before."""
    return f"bench_{re.sub(r'[^A-Za-z0-9_]', '_', spec.name)}_{next(_fresh)}"


def _as_tuple(outputs: Any) -> tuple[Any, ...]:
    return tuple(outputs) if isinstance(outputs, (list, tuple)) else (outputs,)


def _dtypes(spec: GradientSpec) -> list[tf.DType]:
    return [tf.as_dtype(value.dtype) for value in spec.sources]


def _read(spec: GradientSpec, args: Sequence[Any]) -> tuple[Any, ...]:
    """`op(*inputs, *variables)` arguments with each tf.Variable read, as legacy code passes them in."""
    return (*args[: spec.num_inputs], *(tf.convert_to_tensor(v) for v in args[spec.num_inputs:]))


def defun_grad_func(spec: GradientSpec, output_dtypes: Sequence[tf.DType]) -> Op:
    num_inputs, name = len(spec.sources), _fresh_name(spec)

    @function.Defun(*_dtypes(spec), *output_dtypes, func_name=f"{name}_grad")
    def grad(*args):
        inputs, upstreams = args[:num_inputs], args[num_inputs:]
        grads = spec.gradient(inputs, _as_tuple(spec.forward(*inputs)), upstreams)
        return [tf.zeros_like(x) if g is None else tf.convert_to_tensor(g) for x, g in zip(inputs, grads, strict=True)]

    @function.Defun(*_dtypes(spec), grad_func=grad, func_name=name)
    def forward(*inputs):
        return spec.forward(*inputs)

    return lambda *args: _as_tuple(forward(*_read(spec, args)))


def defun_python_grad_func(spec: GradientSpec, output_dtypes: Sequence[tf.DType]) -> Op:
    def grad(op, *upstreams):
        return spec.gradient(tuple(op.inputs), tuple(op.outputs), upstreams)

    @function.Defun(*_dtypes(spec), python_grad_func=grad, func_name=_fresh_name(spec))
    def forward(*inputs):
        return spec.forward(*inputs)

    return lambda *args: _as_tuple(forward(*_read(spec, args)))


def override_map(spec: GradientSpec, output_dtypes: Sequence[tf.DType]) -> Op:
    name, op_type, num_inputs = _fresh_name(spec), spec.op_type, len(spec.sources)
    if op_type is not None:
        @tf.RegisterGradient(name)
        def _grad(op, *upstreams):
            return spec.gradient(tuple(op.inputs), tuple(op.outputs), upstreams)

        def op(*args):
            inputs = _read(spec, args)
            with tf.compat.v1.get_default_graph().gradient_override_map({op_type: name}):
                return _as_tuple(spec.forward(*inputs))

        return op

    @tf.RegisterGradient(name)
    def _wrapped_grad(op, *upstreams):
        num_outputs = len(op.inputs) - num_inputs
        inputs, outputs = tuple(op.inputs[num_outputs:]), tuple(op.inputs[:num_outputs])
        return [None] * num_outputs + list(spec.gradient(inputs, outputs, upstreams[:num_outputs]))

    def wrapped(*args):
        inputs = _read(spec, args)
        outputs = _as_tuple(spec.forward(*inputs))
        with tf.compat.v1.get_default_graph().gradient_override_map({"IdentityN": name}):
            return tuple(tf.identity_n([*outputs, *inputs])[: len(outputs)])

    return wrapped


def custom_gradient(spec: GradientSpec, output_dtypes: Sequence[tf.DType]) -> Op:
    num_inputs = spec.num_inputs

    def op(*args):
        inputs, variables = args[:num_inputs], args[num_inputs:]

        @tf.custom_gradient
        def custom_op(*inputs):
            reads = tuple(tf.convert_to_tensor(v) for v in variables)
            outputs = _as_tuple(spec.forward(*inputs, *reads))

            def grad(*upstreams, **kwargs):  # the `variables=` path when the forward reads tf.Variables
                grads = list(spec.gradient((*inputs, *reads), outputs, upstreams))
                if not variables:
                    return grads
                by_ref = {v.ref(): g for v, g in zip(variables, grads[num_inputs:], strict=True)}
                return grads[:num_inputs], [by_ref[v.ref()] for v in kwargs.get("variables") or ()]

            return (outputs[0] if len(outputs) == 1 else outputs), grad

        return _as_tuple(custom_op(*inputs))

    return op


BASELINE_MECHANISMS: dict[str, OpBuilder] = {
    "defun_grad_func": defun_grad_func,
    "defun_python_grad_func": defun_python_grad_func,
    "override_map": override_map,
    "custom_gradient": custom_gradient,
}


def _dense(grads: Sequence[Any]) -> list[Any]:
    return [tf.convert_to_tensor(g) if isinstance(g, tf.IndexedSlices) else g for g in grads]


def _second_order_target(grads: Sequence[Any]) -> Any:
    terms = [tf.reduce_sum(tf.cast(g, tf.float32)) for g in grads if g is not None]
    return tf.add_n(terms) if terms else None


def gradients_fn(gradients: Callable[..., list[Any]]) -> Callable[..., tuple[list[Any], list[Any]]]:
    """Input gradients (and, for second order, the first-order ones) with tf.gradients or v1 gradients."""

    def compute(op: Op, inputs: list[Any], downstream: Downstream) -> tuple[list[Any], list[Any]]:
        target = downstream.loss(*op(*inputs))
        grad_ys = downstream.output_gradients(target) if downstream.output_gradients else None
        first = _dense(gradients(target, inputs, grad_ys=grad_ys))
        if downstream.order == 1:
            return first, []
        total = _second_order_target(first)
        second = [None] * len(inputs) if total is None else _dense(gradients(total, inputs))
        return second, [g for g in first if g is not None]

    return compute


def tape_fn(op: Op, inputs: list[Any], downstream: Downstream) -> tuple[list[Any], list[Any]]:
    """Input gradients with tf.GradientTape, nested for second order."""
    second_order = downstream.order == 2
    with (tf.GradientTape() if second_order else contextlib.nullcontext()) as outer:
        if second_order:
            outer.watch(inputs)
        with tf.GradientTape() as tape:
            tape.watch(inputs)
            target = downstream.loss(*op(*inputs))
            grad_ys = downstream.output_gradients(target) if downstream.output_gradients else None
        first = _dense(tape.gradient(target, inputs, output_gradients=grad_ys))
        if not second_order:
            return first, []
        total = _second_order_target(first)
    second = [None] * len(inputs) if total is None else _dense(outer.gradient(total, inputs))
    return second, [g for g in first if g is not None]


@dataclasses.dataclass(frozen=True)
class BaselineCase:
    key: tuple[str, str, str, str]  # spec, scenario, dtype, variant: as the harness's cells
    op: Callable[[], Op]
    inputs: tuple[np.ndarray, ...]
    variables: tuple[np.ndarray, ...]
    downstream: Downstream


Grads = dict[tuple[str, str, str, str], list[np.ndarray | None]]


def _shape(value: np.ndarray, downstream: Downstream) -> list[int | None]:
    return [None, *value.shape[1:]] if downstream.dynamic_batch and value.ndim else list(value.shape)


def _unflatten(grads: Sequence[Any], values: Sequence[Any]) -> list[Any]:
    it = iter(values)
    return [None if g is None else next(it) for g in grads]


def run_graph(cases: Sequence[BaselineCase], compute: Callable[..., tuple[list, list]], out: Grads) -> None:
    """One tf.Graph holding every case, one Session.run fetching every gradient."""
    graph, built = tf.Graph(), {}
    with graph.as_default():
        for case in cases:
            try:
                placeholders = [tf.compat.v1.placeholder(v.dtype, _shape(v, case.downstream)) for v in case.inputs]
                variables = [tf.Variable(v) for v in case.variables]
                grads, anchors = compute(case.op(), [*placeholders, *variables], case.downstream)
            except Exception:  # noqa: BLE001 - TensorFlow refuses this combination: skip it, as the harness does.
                continue
            built[case.key] = (grads, [g for g in grads if g is not None], anchors,
                               dict(zip(placeholders, case.inputs, strict=True)))
        initialize = tf.compat.v1.global_variables_initializer()
    with tf.compat.v1.Session(graph=graph) as session:
        session.run(initialize)
        feed = {p: v for _, _, _, case_feed in built.values() for p, v in case_feed.items()}
        try:
            values = session.run({key: (fetch, anchors) for key, (_, fetch, anchors, _) in built.items()}, feed)
        except Exception:  # noqa: BLE001 - as the harness: run each alone to keep the others.
            values = {}
            for key, (_, fetch, anchors, case_feed) in built.items():
                with contextlib.suppress(Exception):
                    values[key] = session.run((fetch, anchors), case_feed)
    for key, value in values.items():
        out[key] = _unflatten(built[key][0], value[0])


def run_eager(cases: Sequence[BaselineCase], compute: Callable[..., tuple[list, list]], out: Grads) -> None:
    for case in cases:
        try:
            sources = [*(tf.constant(v) for v in case.inputs), *(tf.Variable(v) for v in case.variables)]
            grads, _ = compute(case.op(), sources, case.downstream)
        except Exception:  # noqa: BLE001 - e.g. Defun called eagerly.
            continue
        out[case.key] = [None if g is None else g.numpy() for g in grads]


def run_function(cases: Sequence[BaselineCase], compute: Callable[..., tuple[list, list]], out: Grads,
                 jit_compile: bool = False) -> None:
    """Every case traced into one tf.function (XLA-compiled with `jit_compile`), called once; when that run
    fails, the failing cases are found as the harness finds them (compat/contexts/function.py)."""
    failed = _run_traced(cases, compute, out, jit_compile)
    if failed:
        _settle(failed, lambda batch: _run_traced(batch, compute, out, jit_compile))


def _run_traced(cases: Sequence[BaselineCase], compute: Callable[..., tuple[list, list]], out: Grads,
                jit_compile: bool) -> list[BaselineCase]:
    """Trace and run `cases` in one tf.function; the cases that traced, when several did and the run failed."""
    variables = [[tf.Variable(v) for v in case.variables] for case in cases]  # created once, outside
    traced: list[int] = []

    def body(*flat):
        results, position = {}, 0
        for index, case in enumerate(cases):
            inputs = list(flat[position: position + len(case.inputs)])
            position += len(case.inputs)
            with contextlib.suppress(Exception):  # TensorFlow refuses to trace this combination.
                results[str(index)] = compute(case.op(), [*inputs, *variables[index]], case.downstream)[0]
                traced.append(index)
        return results

    signature = [tf.TensorSpec(_shape(v, case.downstream), tf.as_dtype(v.dtype)) for case in cases for v in case.inputs]
    try:
        concrete = tf.function(body, input_signature=signature, autograph=False,
                               jit_compile=jit_compile).get_concrete_function()
    except Exception:  # noqa: BLE001 - nothing traced
        return []
    try:
        values = concrete(*[v for case in cases for v in case.inputs])
    except Exception:  # noqa: BLE001 - one of them fails at run time (or XLA refuses it)
        return [cases[index] for index in traced] if len(traced) > 1 else []
    for index, grads in values.items():
        out[cases[int(index)].key] = [None if g is None else g.numpy() for g in grads]
    return []


def _settle(failed: list[BaselineCase], run: Callable[[list[BaselineCase]], list[BaselineCase]]) -> None:
    """The harness's search for the failing cases of a failed batch: split by variant; halve one variant;
    when both halves fail, run each case alone."""
    groups: dict[str, list[BaselineCase]] = {}
    for case in failed:
        groups.setdefault(case.key[3], []).append(case)
    middle = len(failed) // 2
    parts = list(groups.values()) if len(groups) > 1 else [failed[:middle], failed[middle:]]
    still_failing = [part_failed for part_failed in (run(part) for part in parts) if part_failed]
    if len(groups) == 1 and len(still_failing) == 2:
        for case in (*still_failing[0], *still_failing[1]):
            run([case])
        return
    for part_failed in still_failing:
        _settle(part_failed, run)


def wrapped_op(case: BaselineCase, wrap: Callable[[Callable[..., Any], list[tf.TensorSpec]], Any]) -> Callable[[], Op]:
    """The case's op traced inside `wrap(fn, signature)` (tf.function or wrap_function) at its first call;
    the variables are captured from outside, as a model's weights are."""
    def build() -> Op:
        op = case.op()

        def call(*sources):
            inputs, variables = sources[:len(case.inputs)], sources[len(case.inputs):]
            signature = [tf.TensorSpec(x.shape, x.dtype) for x in inputs]
            return tuple(wrap(lambda *xs: tuple(op(*xs, *variables)), signature)(*inputs))

        return call

    return build


def run_wrapped_eager(cases: Sequence[BaselineCase], wrap: Callable[..., Any], out: Grads) -> None:
    """An eager tape over each case's op wrapped by `wrap`."""
    run_eager([dataclasses.replace(case, op=wrapped_op(case, wrap)) for case in cases], tape_fn, out)


def run_mixed_precision(cases: Sequence[BaselineCase], out: Grads) -> None:
    """Each op in a Keras mixed_float16 layer, the loss scaled from 2**15 and halved while gradients overflow."""
    import keras  # noqa: PLC0415 - the harness's mixed_precision context needs it too

    class OpLayer(keras.layers.Layer):
        def __init__(self, op, **kwargs):
            super().__init__(**kwargs)
            self.op = op

        def call(self, *inputs):
            return tuple(self.op(*inputs))

    for case in cases:
        scale = 2.0**15
        while True:
            def op(*sources, case=case):
                built, n = case.op(), len(case.inputs)
                outputs = OpLayer(lambda *xs: built(*xs, *sources[n:]), dtype="mixed_float16")(*sources[:n])
                return tuple(tf.cast(o, tf.float32) if o.dtype == tf.float16 else o for o in outputs)

            scaled = dataclasses.replace(case.downstream, loss=lambda *o, d=case.downstream, s=scale: d.loss(*o) * s)
            try:
                sources = [*(tf.constant(v) for v in case.inputs), *(tf.Variable(v) for v in case.variables)]
                grads, _ = tape_fn(op, sources, scaled)
            except Exception:  # noqa: BLE001 - e.g. Defun called eagerly.
                break
            values = [None if g is None else g.numpy() / scale for g in grads]
            if scale <= 1.0 or all(v is None or np.all(np.isfinite(v)) for v in values):
                out[case.key] = values
                break
            scale /= 2.0


KERAS_BATCH = 4


def run_keras_fit(cases: Sequence[BaselineCase], out: Grads, retry: bool = True) -> None:
    """One Keras model holding every case's sources as trainable weights, one `model.fit` step (SGD, a batch of
    4, jit_compile=False): each sample's loss is 1/4 of every case's loss, so Keras' mean over the batch divides
    the gradients by 4; SGD records the gradients it is handed, multiplied back by 4. grad_ys and second order
    have no counterpart in fit (skipped, as the harness reports them unsupported); a failing fit is retried
    case by case, as the harness bisects."""
    import keras  # noqa: PLC0415 - the harness's keras_fit context needs it too

    try:  # as the harness: Keras 3 traces the model once for its output spec; nothing to build there
        from keras.src.backend.common.symbolic_scope import in_symbolic_scope  # noqa: PLC0415
    except ImportError:
        in_symbolic_scope = bool
    cases = [case for case in cases if case.downstream.order == 1 and case.downstream.output_gradients is None]
    def variable(weight):  # Keras 3 wraps the tf.Variable; tf.keras 2 returns it
        return weight if isinstance(weight, tf.Variable) else weight.value

    handed: set[tuple[int, int]] = set()

    class Model(keras.Model):
        def __init__(self):
            super().__init__()
            self.case_weights = [[self.add_weight(shape=v.shape, dtype=v.dtype.name,
                                                  initializer=keras.initializers.Constant(v))
                                  for v in (*case.inputs, *case.variables)] for case in cases]
            self.anchor = self.add_weight(shape=(), initializer="zeros")  # a weight the loss always reaches
            self.ops = [case.op() for case in cases]
            self.built = True

        @tf.autograph.experimental.do_not_convert
        def call(self, shares):
            total = tf.convert_to_tensor(variable(self.anchor)) + tf.zeros_like(shares[:, 0])
            if in_symbolic_scope():
                return total
            for case, weights, op in zip(cases, self.case_weights, self.ops, strict=True):
                n = len(case.inputs)
                with contextlib.suppress(Exception):  # TensorFlow refuses to build this combination.
                    loss = case.downstream.loss(*op(*[tf.convert_to_tensor(variable(w)) for w in weights[:n]],
                                                    *[variable(w) for w in weights[n:]]))
                    total += tf.cast(tf.reduce_sum(loss) * tf.cast(shares[:, 0], loss.dtype), tf.float32)
            return total

    model = Model()
    where = {id(w): (c, k) for c, weights in enumerate(model.case_weights) for k, w in enumerate(weights)}
    sinks = {key: tf.Variable(tf.zeros_like(variable(model.case_weights[key[0]][key[1]])), trainable=False)
             for key in where.values()}

    class RecordingSGD(keras.optimizers.SGD):
        def apply_gradients(self, grads_and_vars, *args, **kwargs):
            grads_and_vars = list(grads_and_vars)
            applied = super().apply_gradients(grads_and_vars, *args, **kwargs)
            for grad, var in grads_and_vars:
                if grad is not None and id(var) in where:
                    sinks[where[id(var)]].assign(tf.convert_to_tensor(grad))
                    handed.add(where[id(var)])
            return applied

    model.compile(optimizer=RecordingSGD(learning_rate=0.01), loss=lambda y_true, y_pred: y_pred, jit_compile=False)
    try:
        model.fit(np.full((KERAS_BATCH, 1), 1 / KERAS_BATCH, np.float32), np.zeros(KERAS_BATCH, np.float32),
                  batch_size=KERAS_BATCH, epochs=1, shuffle=False, verbose=0)
    except Exception:  # noqa: BLE001 - as the harness: find the failing cases.
        if retry and len(cases) > 1:
            for case in cases:
                run_keras_fit([case], out, retry=False)
        return
    for c, case in enumerate(cases):
        out[case.key] = [sinks[c, k].numpy() * KERAS_BATCH if (c, k) in handed else None
                         for k in range(len(model.case_weights[c]))]


_SAVED_LOADER = """
import contextlib, json, sys
import numpy as np, tensorflow as tf
directory = sys.argv[1]
manifest = json.load(open(directory + "/cases.json"))
modules = [tf.saved_model.load(directory + "/" + name) for name in manifest["models"]]
out = {}


def second_order_target(grads):
    terms = [tf.reduce_sum(tf.cast(tf.convert_to_tensor(g), tf.float32)) for g in grads if g is not None]
    return tf.add_n(terms) if terms else None


def loaded(module, index):
    forward, loss = getattr(module, f"forward_{index}"), getattr(module, f"loss_{index}")
    grad_ys = getattr(module, f"grad_ys_{index}", None)
    inputs = [tf.constant(v.numpy()) for v in getattr(module, f"inputs_{index}")]
    return forward, loss, grad_ys, inputs, list(getattr(module, f"variables_{index}"))


def tape_grads(case, order):
    forward, loss, grad_ys, inputs, variables = case
    sources = [*inputs, *variables]
    with tf.GradientTape() if order == 2 else contextlib.nullcontext() as outer:
        if order == 2:
            outer.watch(sources)
        with tf.GradientTape() as tape:
            tape.watch(sources)
            target = loss(*forward(*inputs))
        grads = tape.gradient(target, sources, output_gradients=grad_ys(target) if grad_ys else None)
        if order == 1:
            return grads
        total = second_order_target(grads)
    return [None] * len(sources) if total is None else outer.gradient(total, sources)


def symbolic_grads(case, order, inputs):
    forward, loss, grad_ys, _, variables = case
    sources = [*inputs, *variables]
    target = loss(*forward(*inputs))
    grads = tf.gradients(target, sources, grad_ys=grad_ys(target) if grad_ys else None)
    if order == 1:
        return grads
    total = second_order_target(grads)
    return [None] * len(sources) if total is None else tf.gradients(total, sources)


def symbolic(cases, indices):
    # tf.gradients for `indices` in one tf.function; a run that fails is halved, as the harness's loader does.
    def body(*flat):
        results, position = {}, 0
        for index in indices:
            inputs = flat[position: position + len(cases[index][0][3])]
            position += len(inputs)
            with contextlib.suppress(Exception):  # a case that cannot be differentiated: skip it
                grads = symbolic_grads(cases[index][0], cases[index][1], inputs)
                results[str(index)] = [None if g is None else tf.convert_to_tensor(g) for g in grads]
        return results

    try:
        return tf.function(body, autograph=False)(*[x for index in indices for x in cases[index][0][3]])
    except Exception:
        if len(indices) == 1:
            return {}
        middle = len(indices) // 2
        return {**symbolic(cases, indices[:middle]), **symbolic(cases, indices[middle:])}


def save(prefix, index, grads):
    for position, grad in enumerate(grads):
        if grad is not None:
            out[f"{prefix}{index}_{position}"] = tf.cast(tf.convert_to_tensor(grad), tf.float64).numpy()
    out[f"{prefix}{index}_n"] = np.array(len(grads))


for module in modules:
    cases = {index: (loaded(module, index), order) for index, order in manifest["cases"]
             if hasattr(module, f"forward_{index}")}
    for index, (case, order) in cases.items():
        initial = [v.numpy() for v in case[4]]
        try:
            save("", index, tape_grads(case, order))
        except Exception:  # TensorFlow refuses this case (a gradient lost in the round trip): skip it
            pass
        for variable, value in zip(case[4], initial):  # as the harness: restore what a forward changed
            variable.assign(value)
    for key, grads in (symbolic(cases, list(cases)) if cases else {}).items():
        save("s", key, grads)
np.savez(directory + "/grads.npz", **out)
"""


def _saved_case(case: BaselineCase) -> dict[str, Any]:
    """What one case saves: its forward, loss and grad_ys as tf.functions, its variables and its inputs."""
    op, variables = case.op(), [tf.Variable(v) for v in case.variables]
    signature = [tf.TensorSpec(_shape(v, case.downstream), tf.as_dtype(v.dtype)) for v in case.inputs]
    forward = tf.function(lambda *xs: tuple(op(*xs, *variables)), input_signature=signature, autograph=False)
    outputs = tf.nest.flatten(forward.get_concrete_function().structured_outputs)
    loss = tf.function(case.downstream.loss, input_signature=[tf.TensorSpec(o.shape, o.dtype) for o in outputs],
                       autograph=False)
    target = loss.get_concrete_function().structured_outputs
    saved = {"forward": forward, "loss": loss, "variables": variables,
             "inputs": [tf.Variable(v, trainable=False) for v in case.inputs]}
    if case.downstream.output_gradients is not None:
        saved["grad_ys"] = tf.function(case.downstream.output_gradients, autograph=False,
                                       input_signature=[tf.TensorSpec(target.shape, target.dtype)])
    return saved


def _save(traced: dict[int, dict[str, Any]], indices: list[int], path: str, custom_gradients: bool) -> list[int]:
    """Save `indices` in one tf.Module at `path`; where TensorFlow refuses, halve them (as the harness does).
    Returns the indices saved; each half that saves goes to its own path."""
    module = tf.Module()
    for index in indices:
        for name, value in traced[index].items():
            setattr(module, f"{name}_{index}", value)
    try:
        with contextlib.redirect_stderr(io.StringIO()):
            tf.saved_model.save(module, path, options=tf.saved_model.SaveOptions(
                experimental_custom_gradients=custom_gradients))
        return indices
    except Exception:  # noqa: BLE001 - e.g. a registered gradient TensorFlow cannot trace
        if len(indices) == 1:
            return []
        middle = len(indices) // 2
        return [*_save(traced, indices[:middle], path + "a", custom_gradients),
                *_save(traced, indices[middle:], path + "b", custom_gradients)]


def run_saved(cases: Sequence[BaselineCase], out: Grads, custom_gradients: bool) -> None:
    """Every case's forward and loss saved with tf.saved_model.save, one model per spec and dtype, all loaded by
    one fresh Python process that takes each gradient with an eager tape (nested for second order), then with
    tf.gradients in one tf.function per loaded model (the harness's loader does both, and reports where they
    disagree). The tf.gradients results go in `out` under the cell's key with SYMBOLIC appended to its variant."""
    traced = {}
    for index, case in enumerate(cases):
        with contextlib.suppress(Exception):  # TensorFlow refuses to trace this combination: skip it
            traced[index] = _saved_case(case)
    by_unit: dict[tuple[str, str], list[int]] = {}  # one model per spec and dtype, as the harness saves them
    for index in traced:
        by_unit.setdefault((cases[index].key[0], cases[index].key[2]), []).append(index)
    with tempfile.TemporaryDirectory() as directory:
        saved = [index for unit, indices in enumerate(by_unit.values())
                 for index in _save(traced, indices, f"{directory}/model_{unit}_", custom_gradients)]
        models = sorted(p.name for p in Path(directory).iterdir())
        manifest = [(index, cases[index].downstream.order) for index in saved]
        Path(f"{directory}/cases.json").write_text(json.dumps({"models": models, "cases": manifest}))
        subprocess.run([sys.executable, "-c", _SAVED_LOADER, directory], check=True, capture_output=True,
                       env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
        with np.load(f"{directory}/grads.npz") as grads:
            for index, _ in manifest:
                spec, scenario, dtype, variant = cases[index].key
                for prefix, key in (("", cases[index].key), ("s", (spec, scenario, dtype, variant + SYMBOLIC))):
                    if f"{prefix}{index}_n" in grads:
                        out[key] = [grads.get(f"{prefix}{index}_{p}") for p in range(int(grads[f"{prefix}{index}_n"]))]


SYMBOLIC = "#tf.gradients"
"""Appended to a saved_model cell's variant in the baseline's results: what tf.gradients computed there."""


SAVED_CONTEXTS = ("saved_model", "saved_model_stripped")
"""Run once over every plan's cases (one model saved per spec and dtype, one loading process for them all)."""

BASELINE_CONTEXTS: dict[str, Callable[[Sequence[BaselineCase], Grads], None]] = {
    "v1_session": lambda cases, out: run_graph(cases, gradients_fn(tf.compat.v1.gradients), out),
    "v1_tape": lambda cases, out: run_graph(cases, tape_fn, out),
    "eager_tape": lambda cases, out: run_eager(cases, tape_fn, out),
    "function_tape": lambda cases, out: run_function(cases, tape_fn, out),
    "function_gradients": lambda cases, out: run_function(cases, gradients_fn(tf.gradients), out),
    "outer_tape": lambda cases, out: run_wrapped_eager(
        cases, lambda fn, signature: tf.function(fn, input_signature=signature, autograph=False), out),
    "wrap_function": lambda cases, out: run_wrapped_eager(cases, tf.compat.v1.wrap_function, out),
    "xla_tape": lambda cases, out: run_function(cases, tape_fn, out, jit_compile=True),
    "xla_gradients": lambda cases, out: run_function(cases, gradients_fn(tf.gradients), out, jit_compile=True),
    "mixed_precision": run_mixed_precision,
    "keras_fit": run_keras_fit,
    "saved_model": lambda cases, out: run_saved(cases, out, custom_gradients=True),
    "saved_model_stripped": lambda cases, out: run_saved(cases, out, custom_gradients=False),
    "recompute_grad": lambda cases, out: run_wrapped_eager(
        cases, lambda fn, signature: tf.recompute_grad(lambda *xs: list(fn(*xs))), out),
}


@dataclasses.dataclass(frozen=True)
class Plan:
    """What a user knows before writing the code: the spec in one dtype, its output dtypes, its downstreams."""

    spec: GradientSpec
    dtype: str
    output_dtypes: tuple[tf.DType, ...]
    downstreams: tuple[Downstream, ...]


def plan(names: Sequence[str], scenarios: Sequence[str], dtypes: Sequence[str]) -> list[Plan]:
    plans = []
    for name in names:
        for dtype in dtypes:
            typed = cast_spec(CATALOGUE[name](), dtype)
            try:
                applicable = [SCENARIOS[s] for s in scenarios if SCENARIOS[s].skip_reason(typed) is None]
            except Exception:  # noqa: BLE001 - a forward that fails: the harness skips it too.
                continue
            if applicable:
                plans.append(Plan(typed, dtype, output_signature(typed).dtypes,
                                  tuple(s.downstream(typed) for s in applicable)))
    return plans


def run_baseline(plans: Sequence[Plan]) -> Grads:
    out: Grads = {}
    deferred: dict[str, list[BaselineCase]] = {context: [] for context in SAVED_CONTEXTS}
    for p in plans:
        for context, run_context in BASELINE_CONTEXTS.items():
            cases = [BaselineCase((p.spec.name, d.name, p.dtype, f"{mechanism}@{context}"),
                                  lambda b=build, p=p: b(p.spec, p.output_dtypes), p.spec.example_inputs,
                                  p.spec.variables, d)
                     for mechanism, build in BASELINE_MECHANISMS.items() for d in p.downstreams]
            if context in deferred:
                deferred[context] += cases
            else:
                run_context(cases, out)
    for context, cases in deferred.items():
        BASELINE_CONTEXTS[context](cases, out)
    return out


# ---------------------------------------------------------------------------------------------- the harness

def run_harness(names: Sequence[str], scenarios: Sequence[str], dtypes: Sequence[str]) -> CheckReport:
    # Without the references that are the forward itself: the baseline computes only the cells' gradients (what the
    # references add is timed by benchmarks/references.py).
    return check([CATALOGUE[name]() for name in names], scenarios=scenarios, dtypes=dtypes, references=[])


# ------------------------------------------------------------------------------------------------ reporting

def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def _same_grads(mine: Sequence[Any] | None, theirs: Sequence[Any]) -> bool:
    return mine is not None and len(mine) == len(theirs) and all(
        (a is None) == (b is None) and (a is None or np.allclose(
            np.asarray(a, np.float64), np.asarray(b, np.float64), rtol=1e-3, atol=1e-3, equal_nan=True))
        for a, b in zip(mine, theirs, strict=True))


_LOADER_DISAGREED = "tf.gradients inside a tf.function disagreed with the eager tape"


def verify(report: CheckReport, grads: Grads) -> tuple[bool, str]:
    """Whether the baseline computed what the harness computed (same cells ran, same input gradients; in the
    saved_model contexts, tf.gradients computed the same wherever the harness reports no disagreement with the
    tape), and a line saying so."""
    ran = {(c.spec, c.scenario, c.dtype, c.variant): c for c in report.cells
           if c.result.status in ("ok", "not_called", "not_observable")}
    refused = {(c.spec, c.scenario, c.dtype, c.variant) for c in report.cells if c.result.status == "unsupported"}
    tape = {key: value for key, value in grads.items() if not key[3].endswith(SYMBOLIC)}
    mismatched = [key for key, cell in ran.items() if not _same_grads(tape.get(key), cell.result.input_grads)]
    extra = sorted(set(tape) - set(ran))
    agreeing = [key for key, cell in ran.items()
                if cell.context in SAVED_CONTEXTS and _LOADER_DISAGREED not in cell.result.message]
    symbolic_mismatched = [key for key in agreeing if not _same_grads(
        grads.get((*key[:3], key[3] + SYMBOLIC)), ran[key].result.input_grads)]
    line = (f"verify: harness ran {len(ran)} cells (+{len(refused)} unsupported, "
            f"{len(report.cells) - len(ran) - len(refused)} error); baseline ran {len(tape)}; "
            f"{len(ran) - len(mismatched)} match, {len(mismatched)} differ, {len(extra)} only in the baseline; "
            f"tf.gradients in the loading process: {len(agreeing) - len(symbolic_mismatched)} of {len(agreeing)} "
            f"saved cells match")
    for key in (mismatched + extra + symbolic_mismatched)[:8]:
        line += f"\n  differs: {'/'.join(key)} harness={ran.get(key) and ran[key].result.status}"
    return not (mismatched or extra or symbolic_mismatched), line


def profile_harness(names: Sequence[str], scenarios: Sequence[str], dtypes: Sequence[str]) -> str:
    profiler = cProfile.Profile()
    profiler.enable()
    run_harness(names, scenarios, dtypes)
    profiler.disable()
    stream = io.StringIO()
    stats = pstats.Stats(profiler, stream=stream).strip_dirs().sort_stats("cumulative")
    stats.print_stats(40)
    return stream.getvalue()


def _timed_side(fn: Callable[[], Any]) -> tuple[float, float, Any]:
    """(wall s, this process's CPU s, result) of one side."""
    gc.collect()
    start, cpu = time.perf_counter(), time.process_time()
    result = fn()
    return time.perf_counter() - start, time.process_time() - cpu, result


def run_app(jobs: int, names: Sequence[str], scenarios: Sequence[str], dtypes: Sequence[str],
            output: Path) -> Measured:
    """`compat-check --format=json` in a child process, as a user runs it, with `--jobs`."""
    command = [sys.executable, "-m", "compat.apps.check", "--format=json", f"--output={output}", f"--jobs={jobs}",
               f"--dtypes={','.join(dtypes)}"]
    if list(names) != list(CATALOGUE):
        command.append(f"--specs={','.join(names)}")
    if list(scenarios) != list(SCENARIOS):
        command.append(f"--scenarios={','.join(scenarios)}")
    env = {**os.environ, "PYTHONPATH": str(_ROOT), "TF_CPP_MIN_LOG_LEVEL": "3"}
    return measure(command, env=env)


_NUMBERED = re.compile(r"\d+")


def _numbers_masked(value: Any) -> Any:
    """`value` with every number in its strings masked; a string holding a message cut at its length limit
    ("...", also inside a difference's detail: "...)") is kept to its first 300 characters, since numbers of
    another length move the cut."""
    if isinstance(value, str):
        masked = _NUMBERED.sub("#", re.sub(r"_\d+\b", "", value))  # Keras: `op_layer`, then `op_layer_1`
        return masked[:300] if "..." in value else masked
    if isinstance(value, dict):
        return {key: _numbers_masked(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_numbers_masked(item) for item in value]
    return value


def _untimed(report: dict[str, Any]) -> dict[str, Any]:
    """The report without each unit's seconds (timed per run, like any wall time)."""
    return {**report, "units": [{**unit, "seconds": 0} for unit in report.get("units", [])]}


def compare_reports(one: Path, many: Path) -> tuple[bool, str]:
    """(acceptable, what differs) between the --jobs=1 and --jobs=N JSON reports.

    Names numbered per process (TensorFlow's traced functions, `__inference_body_67728`; the Defun names
    gradcompat makes, `gc_scaled_ste_30`) differ with what ran before in that process: cells whose messages
    differ only in such numbers are counted apart; each unit's seconds are not compared; any other difference is a
    failure.
    """
    a, b = (_untimed(json.loads(path.read_text())) for path in (one, many))
    other = sorted(key for key in a if key != "cells" and a[key] != b.get(key))
    if other or len(a["cells"]) != len(b["cells"]):
        return False, f"reports differ: {other or 'the number of cells'}"
    pairs = [(x, y) for x, y in zip(a["cells"], b["cells"], strict=True) if x != y]
    differing = [x for x, y in pairs if _numbers_masked(x) != _numbers_masked(y)]
    if differing:
        first = differing[0]
        return False, (f"{len(differing)} cells differ, e.g. {first['spec']}/{first['scenario']}/{first['variant']}")
    if pairs:
        return True, (f"equal, except {len(pairs)} of {len(a['cells'])} cells whose messages differ only in a "
                      f"name numbered per process")
    return True, f"equal ({len(a['cells'])} cells)"


def main(argv: Sequence[str]) -> int:
    if len(argv) > 1:
        raise app.UsageError(f"unexpected arguments {argv[1:]}; this benchmark takes only flags (see --help)",
                             exitcode=2)
    dtypes, names, scenarios = _DTYPES.value, _SPECS.value or list(CATALOGUE), _SCENARIOS.value or list(SCENARIOS)
    choices = (("dtype", dtypes, DTYPES), ("spec", names, CATALOGUE), ("scenario", scenarios, SCENARIOS))
    for what, given, known in choices:
        unknown = [name for name in given if name not in known]
        if unknown:
            raise app.UsageError(f"unknown {what}(s) {unknown}; choose from {list(known)}", exitcode=2)
    # The baseline is written per mechanism and context: a new one in compat must be added here too.
    missing = [name for name in (*MECHANISMS, *CONTEXTS) if name not in (*BASELINE_MECHANISMS, *BASELINE_CONTEXTS)]
    if missing:
        print(f"refusing to run: the baseline does not implement {missing} (compat has mechanisms "
              f"{list(MECHANISMS)} and contexts {list(CONTEXTS)}); add each to BASELINE_MECHANISMS or "
              f"BASELINE_CONTEXTS in benchmarks/check_matrix.py", file=sys.stderr)
        return 2
    if list(BASELINE_MECHANISMS) != list(MECHANISMS) or list(BASELINE_CONTEXTS) != list(CONTEXTS):
        raise app.UsageError(f"the baseline covers mechanisms {list(BASELINE_MECHANISMS)} and contexts "
                             f"{list(BASELINE_CONTEXTS)} but compat has {list(MECHANISMS)} and {list(CONTEXTS)}; "
                             f"keep them in compat's registry order in benchmarks/check_matrix.py")
    all_jobs = [int(j) for j in _JOBS.value] if _JOBS.value else sorted({1, usable_cpus()})
    # The baseline's SavedModel saving, Keras fits and retraced wrappers log and warn on every case; the
    # harness silences the same messages, so they would only bury the timings.
    logging.set_verbosity(logging.ERROR)
    tf.get_logger().setLevel("ERROR")
    warnings.filterwarnings("ignore", message="Gradients do not exist for variables")
    print(f"TensorFlow {tf.__version__}, numpy {np.__version__}, Python {sys.version.split()[0]}; specs {names}; "
          f"scenarios {'all' if scenarios == list(SCENARIOS) else scenarios}; dtypes {dtypes}; "
          f"{usable_cpus()} usable CPUs; {load_average()}", flush=True)

    rows: list[tuple[str, str]] = []
    verdicts: list[bool] = []
    if _ONE_PROCESS.value:
        plans = plan(names, scenarios, dtypes)
        warm_up, _, _ = _timed_side(lambda: (run_harness(names, scenarios, dtypes[:1]), run_baseline(plans[:1])))
        print(f"warm-up (harness on the specs in {dtypes[0]}, baseline on one spec): {warm_up:.2f} s", flush=True)
        times: dict[str, list[tuple[float, float]]] = {"harness": [], "baseline": []}
        report: CheckReport | None = None
        grads: Grads = {}
        for repeat in range(_REPEATS.value):
            for side in ("harness", "baseline") if repeat % 2 == 0 else ("baseline", "harness"):
                if side == "harness":
                    seconds, cpu, report = _timed_side(lambda: run_harness(names, scenarios, dtypes))
                else:
                    seconds, cpu, grads = _timed_side(lambda: run_baseline(plans))
                times[side].append((seconds, cpu))
                print(f"  repeat {repeat + 1} {side:8s} {seconds:7.2f} s wall, {cpu:7.2f} s CPU; {load_average()}",
                      flush=True)
        assert report is not None
        best_h, best_b = min(t[0] for t in times["harness"]), min(t[0] for t in times["baseline"])
        med_h = statistics.median(t[0] for t in times["harness"])
        med_b = statistics.median(t[0] for t in times["baseline"])
        cpu_h, cpu_b = min(t[1] for t in times["harness"]), min(t[1] for t in times["baseline"])
        ratio, target = best_h / best_b, _TARGET.value
        verdicts.append(ratio <= target)
        rows += [
            ("specs x dtypes (units)", f"{len(report.specs)} x {len(report.dtypes)}"),
            ("cells (spec x scenario x dtype x variant)", f"{len(report.cells)}"),
            ("baseline computations", f"{sum(len(p.downstreams) for p in plans) * len(MECHANISMS) * len(CONTEXTS)}"),
            ("one process: harness s   (best / median; best CPU)", f"{best_h:.2f} / {med_h:.2f}; {cpu_h:.2f}"),
            ("one process: baseline s  (best / median; best CPU)", f"{best_b:.2f} / {med_b:.2f}; {cpu_b:.2f}"),
            ("ratio harness/baseline (best / median; CPU)",
             f"{ratio:.2f} / {med_h / med_b:.2f}; {cpu_h / cpu_b:.2f}"),
            ("target", f"<= {target:.2f}: {'PASS' if ratio <= target else 'MISS'}"),
            ("peak RSS MiB of this process (both sides, all repeats)", f"{peak_rss_mib():.0f}"),
        ]
        if _VERIFY.value:
            verified, line = verify(report, grads)
            verdicts.append(verified)  # a baseline that computed something else makes the ratio meaningless
            rows.append(("verify", line))
    if _APP.value:
        with tempfile.TemporaryDirectory() as tmp:
            runs: dict[int, list[Measured]] = {jobs: [] for jobs in all_jobs}
            for repeat in range(_APP_REPEATS.value):
                for jobs in all_jobs if repeat % 2 == 0 else all_jobs[::-1]:
                    measured = run_app(jobs, names, scenarios, dtypes, Path(tmp) / f"jobs{jobs}.json")
                    runs[jobs].append(measured)
                    print(f"  compat-check --jobs={jobs}: {measured.seconds:.2f} s wall, {measured.cpu_seconds:.2f} s "
                          f"CPU, exit {measured.returncode}; {load_average()}", flush=True)
                    if measured.returncode not in (0, 1):
                        print(f"compat-check --jobs={jobs} failed (exit {measured.returncode}):\n"
                              f"{measured.stderr[-2000:]}", file=sys.stderr)
                        return 1
            for jobs, measured_runs in runs.items():
                best = min(measured_runs, key=lambda m: m.seconds)
                rows.append((f"compat-check --jobs={jobs} s (best wall; CPU)",
                             f"{best.seconds:.2f}; {best.cpu_seconds:.2f}"))
                rows.append(("  peak RSS MiB per process", best.rss_line()))
            one, many = min(all_jobs), max(all_jobs)
            if one != many:
                app_ratio = min(m.seconds for m in runs[many]) / min(m.seconds for m in runs[one])
                same, how = compare_reports(Path(tmp) / f"jobs{one}.json", Path(tmp) / f"jobs{many}.json")
                verdicts.append(same)
                rows += [
                    (f"ratio --jobs={many} / --jobs={one} (wall)", f"{app_ratio:.2f}"),
                    (f"report --jobs={many} vs --jobs={one}", ("" if same else "MISS: ") + how),
                ]
            busiest = min(runs[many], key=lambda m: m.seconds)
            busy = busiest.cpu_seconds / (busiest.seconds * many)
            verdicts.append(busy >= _APP_BUSY.value)
            rows += [(f"cores busy, --jobs={many} (CPU / (wall x {many}))", f"{busy:.2f}"),
                     ("target", f">= {_APP_BUSY.value:.2f}: {'PASS' if busy >= _APP_BUSY.value else 'MISS'}")]
    width = max(len(name) for name, _ in rows) if rows else 0
    print()
    for name, value in rows:
        print(f"{name:<{width}}  {value}")
    print(f"result: {'PASS' if all(verdicts) else 'MISS'}; {load_average()}")
    if _PROFILE.value:
        print(profile_harness(names, scenarios, dtypes))
    return 0 if all(verdicts) else 1


if __name__ == "__main__":
    app.run(main)
