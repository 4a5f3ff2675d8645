"""Benchmark: the check matrix (`compat.matrix.check`) against the same gradients in bare TensorFlow.

Run: `python benchmarks/check_matrix.py [--repeats=3] [--dtypes=float32,float16] [--profile]`.

(a) *harness*: `compat.matrix.check` on every spec in CATALOGUE (found at run time), all scenarios, all
    variants, the default reference: probes, output signatures, validation, comparison, the report.
(b) *baseline*: the same gradient computations written as a user would, with no harness: for each spec x dtype
    x context, one tf.Graph + one Session.run (v1 contexts), one eager loop, or one traced tf.function called
    once, holding every mechanism x applicable scenario (Defun + grad_func, Defun + python_grad_func,
    RegisterGradient + gradient_override_map under a fresh name, tf.custom_gradient), the spec's `gradient`
    called directly. What TensorFlow refuses to build (Defun in eager...) is caught and skipped, as the
    harness reports it `unsupported`; a batch that fails at run time is retried case by case, as the harness does.

The downstreams (`scenario.downstream(spec)`) and the output dtypes the Defun gradient needs are prepared once,
before timing: a user writes them by hand. Both sides are warmed up once, their order alternates across repeats,
and the target is harness / baseline <= 1.5 (best of repeats). Exit code 0 on PASS, 1 on MISS.
"""

from __future__ import annotations

import contextlib
import cProfile
import dataclasses
import gc
import io
import itertools
import os
import pstats
import re
import resource
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from absl import app, flags  # noqa: E402
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

_REPEATS = flags.DEFINE_integer("repeats", 3, "Timed runs of each side; best and median are reported.",
                                lower_bound=1)
_DTYPES = flags.DEFINE_list("dtypes", ["float32"], f"The dtype axis, from {list(DTYPES)}.")
_TARGET = flags.DEFINE_float("target", 1.5, "The harness / baseline ratio to stay under.")
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
                 retry: bool = True, jit_compile: bool = False) -> None:
    """Every case traced into one tf.function (XLA-compiled with `jit_compile`), called once."""

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
        values = concrete(*[v for case in cases for v in case.inputs])
    except Exception:  # noqa: BLE001 - as the harness: trace and run each traced case alone.
        if retry and len(traced) > 1:
            for index in traced:
                run_function([cases[index]], compute, out, retry=False, jit_compile=jit_compile)
        return
    for index, grads in values.items():
        out[cases[int(index)].key] = [None if g is None else g.numpy() for g in grads]


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
}


@dataclasses.dataclass(frozen=True)
class Plan:
    """What a user knows before writing the code: the spec in one dtype, its output dtypes, its downstreams."""

    spec: GradientSpec
    dtype: str
    output_dtypes: tuple[tf.DType, ...]
    downstreams: tuple[Downstream, ...]


def plan(dtypes: Sequence[str]) -> list[Plan]:
    plans = []
    for factory in CATALOGUE.values():
        for dtype in dtypes:
            typed = cast_spec(factory(), dtype)
            try:
                applicable = [s for s in SCENARIOS.values() if s.skip_reason(typed) is None]
            except Exception:  # noqa: BLE001 - a forward that fails: the harness skips it too.
                continue
            if applicable:
                plans.append(Plan(typed, dtype, output_signature(typed).dtypes,
                                  tuple(s.downstream(typed) for s in applicable)))
    return plans


def run_baseline(plans: Sequence[Plan]) -> Grads:
    out: Grads = {}
    for p in plans:
        for context, run_context in BASELINE_CONTEXTS.items():
            cases = [BaselineCase((p.spec.name, d.name, p.dtype, f"{mechanism}@{context}"),
                                  lambda b=build, p=p: b(p.spec, p.output_dtypes), p.spec.example_inputs,
                                  p.spec.variables, d)
                     for mechanism, build in BASELINE_MECHANISMS.items() for d in p.downstreams]
            run_context(cases, out)
    return out


# ---------------------------------------------------------------------------------------------- the harness

def run_harness(dtypes: Sequence[str]) -> CheckReport:
    return check([factory() for factory in CATALOGUE.values()], dtypes=dtypes)


# ------------------------------------------------------------------------------------------------ reporting

def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def _timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    gc.collect()
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def verify(report: CheckReport, grads: Grads) -> str:
    """The baseline computed what the harness computed: same cells ran, same input gradients."""
    ran = {(c.spec, c.scenario, c.dtype, c.variant): c for c in report.cells
           if c.result.status in ("ok", "not_called")}
    refused = {(c.spec, c.scenario, c.dtype, c.variant) for c in report.cells if c.result.status == "unsupported"}
    mismatched = []
    for key, cell in ran.items():
        mine = grads.get(key)
        theirs = cell.result.input_grads
        if mine is None or len(mine) != len(theirs) or any(
                (a is None) != (b is None) or (a is not None and not np.allclose(
                    np.asarray(a, np.float64), np.asarray(b, np.float64), rtol=1e-3, atol=1e-3, equal_nan=True))
                for a, b in zip(mine, theirs, strict=True)):
            mismatched.append(key)
    extra = sorted(set(grads) - set(ran))
    line = (f"verify: harness ran {len(ran)} cells (+{len(refused)} unsupported, "
            f"{len(report.cells) - len(ran) - len(refused)} error); baseline ran {len(grads)}; "
            f"{len(ran) - len(mismatched)} match, {len(mismatched)} differ, {len(extra)} only in the baseline")
    for key in (mismatched + extra)[:8]:
        line += f"\n  differs: {'/'.join(key)} harness={ran.get(key) and ran[key].result.status}"
    return line


def profile_harness(dtypes: Sequence[str]) -> str:
    profiler = cProfile.Profile()
    profiler.enable()
    run_harness(dtypes)
    profiler.disable()
    stream = io.StringIO()
    stats = pstats.Stats(profiler, stream=stream).strip_dirs().sort_stats("cumulative")
    stats.print_stats(40)
    return stream.getvalue()


def main(argv: Sequence[str]) -> int:
    if len(argv) > 1:
        raise app.UsageError(f"unexpected arguments {argv[1:]}; this benchmark takes only flags (see --help)")
    dtypes = _DTYPES.value
    unknown = [d for d in dtypes if d not in DTYPES]
    if unknown:
        raise app.UsageError(f"unknown dtype(s) {unknown}; choose from {list(DTYPES)}")
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
    check_app = Path(__file__).resolve().parent.parent / "compat" / "apps" / "check.py"
    print(f"TensorFlow {tf.__version__}, numpy {np.__version__}, Python {sys.version.split()[0]}; "
          f"specs {sorted(CATALOGUE)}; dtypes {dtypes}; compat-check app "
          f"{'present (timed through compat.matrix.check)' if check_app.exists() else 'absent'}", flush=True)

    plans = plan(dtypes)
    warm_up, _ = _timed(lambda: (run_harness(dtypes[:1]), run_baseline(plans[:1])))
    print(f"warm-up (harness on all specs in {dtypes[0]}, baseline on one spec): {warm_up:.2f} s", flush=True)

    harness_times, baseline_times = [], []
    report: CheckReport | None = None
    grads: Grads = {}
    for repeat in range(_REPEATS.value):
        order = ("harness", "baseline") if repeat % 2 == 0 else ("baseline", "harness")
        for side in order:
            if side == "harness":
                seconds, report = _timed(lambda: run_harness(dtypes))
                harness_times.append(seconds)
            else:
                seconds, grads = _timed(lambda: run_baseline(plans))
                baseline_times.append(seconds)
            print(f"  repeat {repeat + 1} {side:8s} {seconds:7.2f} s", flush=True)
    assert report is not None

    best_h, best_b = min(harness_times), min(baseline_times)
    med_h, med_b = statistics.median(harness_times), statistics.median(baseline_times)
    ratio, target = best_h / best_b, _TARGET.value
    verdict = "PASS" if ratio <= target else "MISS"
    rows = [
        ("specs", f"{len(report.specs)}"),
        ("dtypes", ",".join(report.dtypes)),
        ("cells (spec x scenario x dtype x variant)", f"{len(report.cells)}"),
        ("baseline computations", f"{sum(len(p.downstreams) for p in plans) * len(MECHANISMS) * len(CONTEXTS)}"),
        ("harness s   (best / median)", f"{best_h:.2f} / {med_h:.2f}"),
        ("baseline s  (best / median)", f"{best_b:.2f} / {med_b:.2f}"),
        ("ratio harness/baseline (best / median)", f"{ratio:.2f} / {med_h / med_b:.2f}"),
        ("target", f"<= {target:.2f}"),
        ("result", verdict),
        ("peak RSS MiB", f"{peak_rss_mib():.0f}"),
    ]
    width = max(len(name) for name, _ in rows)
    print()
    for name, value in rows:
        print(f"{name:<{width}}  {value}")
    if _VERIFY.value:
        print(verify(report, grads))
    if _PROFILE.value:
        print(profile_harness(dtypes))
    return 0 if verdict == "PASS" else 1


if __name__ == "__main__":
    app.run(main)
