"""The upstream-gradient probe: records what a user's gradient function receives, at its entry."""

from __future__ import annotations

import contextlib
import os
import threading
import traceback
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Protocol, TypeVar

import numpy as np
import tensorflow as tf

try:  # where tf.custom_gradient finds the variables a function reads (TF 2.13+; tape.py before)
    from tensorflow.python.eager.record import VariableWatcher
except ImportError:  # pragma: no cover - TensorFlow 2.12
    from tensorflow.python.eager.tape import VariableWatcher

from compat.composite import component
from compat.exceptions import describe_exception
from compat.naming import ascii_word, next_number
from compat.results import Upstream, intern_array
from compat.spec import GradientSpec


class UserCodeError(Exception):
    """The user's forward or gradient function failed or broke its contract; the message names both.

    `refused`: TensorFlow itself raised, refusing in this mode what the user's code asked for (`tf.gradients`
    when eager execution is enabled): the combination is unsupported, not the user's code broken.
    """

    def __init__(self, where: str, problem: str, refused: bool = False):
        super().__init__(f"{where}: {problem}")
        self.problem = problem
        self.refused = refused


_TF_PACKAGE = os.path.dirname(tf.__file__)
_REFUSAL_TYPES = (RuntimeError, NotImplementedError, LookupError)


def refused_by_tensorflow(exc: BaseException) -> bool:
    """Whether `exc`, raised in user code, is TensorFlow refusing an API in this mode (`tf.gradients is not
    supported when eager execution is enabled`, `No gradient defined for operation`): raised by TensorFlow's own
    code (its innermost frame), as one of the kinds TensorFlow refuses with."""
    if not isinstance(exc, _REFUSAL_TYPES) or isinstance(exc, KeyError):
        return False
    frames = traceback.extract_tb(exc.__traceback__)
    return bool(frames) and os.path.abspath(frames[-1].filename).startswith(_TF_PACKAGE + os.sep)


PROBE_COLLECTION = "gradcompat_probe_records"
"""Graph collection of the record ops made in a graph: a Session fetches them, so a gradient function whose
returned gradients do not depend on its record (all None) is still counted when it runs."""


class ReturnedUpstreams:
    """Upstreams captured as symbolic tensors that the enclosing traced function returns, instead of by a
    `tf.numpy_function` (which XLA cannot compile: "No registered 'PyFunc' OpKernel for XLA_CPU_JIT").

    Only tensors of `graph` itself can be returned; a gradient function built in another graph (a Defun
    body, a cond branch) is noted in `unobservable` and its probe reports the upstream as not observable.
    The calls are recorded by `deliver`, with the values the function returned, only once it has run.
    """

    def __init__(self, graph: Any):
        self.graph = graph
        self.tensors: list[tf.Tensor] = []
        self._pending: list[tuple[Probe, _Site, int]] = []

    unobservable = ("the gradient function was built in a nested graph (e.g. a Defun body or a cond branch) whose "
                    "tensors the compiled function cannot return")

    def capture(self, probe: Probe, site: _Site, tensors: list[tf.Tensor]) -> Any:
        if (any(tensor.graph is not self.graph for tensor in tensors)
                or tf.compat.v1.get_default_graph() is not self.graph):
            return None
        self.tensors += tensors
        self._pending.append((probe, site, len(tensors)))
        return tf.constant(0, tf.int64)

    def deliver(self, values: Sequence[Any]) -> None:
        """Record one call per captured gradient-function entry, from the returned values in order."""
        flat = iter(values)
        for probe, site, count in self._pending:
            probe.record_call(site.records([_to_numpy(next(flat)) for _ in range(count)]))


_returning = threading.local()
_Sink = TypeVar("_Sink", bound="UpstreamSink")


class UpstreamSink(Protocol):
    """Where probes capture upstreams instead of by `tf.numpy_function`, while `capturing_upstreams` is active."""

    unobservable: str
    """Why a capture that `capture` refused cannot be observed: the probe's cell says so."""

    def capture(self, probe: Probe, site: _Site, tensors: list[tf.Tensor]) -> Any:
        """Capture one call's upstream tensors; return what the gradients must run after, or None if refused."""


@contextlib.contextmanager
def capturing_upstreams(sink: _Sink) -> Iterator[_Sink]:
    """While active, every probe hands its gradient function's upstreams to `sink`."""
    previous = getattr(_returning, "stash", None)
    _returning.stash = sink
    try:
        yield sink
    finally:
        _returning.stash = previous


def returning_upstreams(graph: Any) -> contextlib.AbstractContextManager[ReturnedUpstreams]:
    """While tracing into `graph`, capture every probe's upstreams as tensors to return (see ReturnedUpstreams)."""
    return capturing_upstreams(ReturnedUpstreams(graph))


class LazyTensors(Sequence[Any]):
    """Tensors a gradient function receives, made by `read()` only when it first uses them: the adapter does no
    work on the user's behalf that their own code would not do (a Defun `grad_func` is not handed the forward's
    outputs; computing them again runs the forward's ops, random or stateful ones included, a second time)."""

    def __init__(self, read: Callable[[], Sequence[Any]], description: str = "tensors"):
        self._reader = read
        self._description = description
        self._tensors: tuple[Any, ...] | None = None

    def _read(self) -> tuple[Any, ...]:
        if self._tensors is None:
            self._tensors = tuple(self._reader())
        return self._tensors

    def __getitem__(self, index: Any) -> Any:
        return self._read()[index]

    def __len__(self) -> int:
        return len(self._read())

    def __iter__(self) -> Iterator[Any]:
        return iter(self._read())

    def __add__(self, other: Any) -> tuple[Any, ...]:
        return self._read() + tuple(other)

    def __radd__(self, other: Any) -> tuple[Any, ...]:
        return tuple(other) + self._read()

    def __repr__(self) -> str:
        return self._description if self._tensors is None else repr(self._tensors)


class OpTensors(LazyTensors):
    """`op.inputs` or `op.outputs` (a slice of them), read from `op` only when the gradient function uses them.

    A legacy gradient function `(op, *grads)` that never reads `op` works where TensorFlow hands it no op:
    `tf.saved_model.save` traces every registered gradient with `op=None`. The adapter must not read `op` on
    the user's behalf, so each spec gets what its own legacy code would: reading it then raises Python's own
    AttributeError (`'NoneType' object has no attribute 'inputs'`), and TensorFlow refuses to save.
    """

    def __init__(self, op: Any, attribute: str, start: int = 0, stop: int | None = None):
        super().__init__(lambda: tuple(getattr(op, attribute))[start:stop], f"op.{attribute}")
        self.op = op

    @property
    def missing_op(self) -> bool:
        """True when TensorFlow handed the gradient function no op (`op=None`)."""
        return self.op is None


def _missing_op(*sequences: Sequence[Any]) -> bool:
    return any(isinstance(sequence, OpTensors) and sequence.missing_op for sequence in sequences)


def user_exception(exc: BaseException) -> bool:
    """Whether to turn `exc`, raised by user code, into a result: everything but a user's Ctrl-C.

    `SystemExit` from user code included: a `sys.exit(0)` in a gradient must not end the run as a pass.
    """
    return not isinstance(exc, (KeyboardInterrupt, GeneratorExit))


def _static_shape(shape: tf.TensorShape) -> tuple[int | None, ...] | None:
    return None if shape.rank is None else tuple(shape.as_list())


def _to_numpy(value: Any) -> np.ndarray:
    return intern_array(np.array(value.numpy() if hasattr(value, "numpy") else value))


class _Site:
    """The static side of one gradient-function entry: what was handed over, seen while building.

    It keeps no tensors (only `flatten` returns them), so a record never keeps a graph alive.
    """

    def __init__(self) -> None:
        self.kinds: list[str] = []
        self.dtypes: list[str | None] = []
        self.shapes: list[tuple[int | None, ...] | None] = []
        self.has_dense_shape: list[bool] = []

    @classmethod
    def flatten(cls, upstreams: Sequence[Any]) -> tuple[_Site, list[tf.Tensor]]:
        """The site, and the tensors to record: values (+ indices, dense_shape) per non-None upstream."""
        site = cls()
        tensors: list[tf.Tensor] = []
        for upstream in upstreams:
            if upstream is None:
                site._add("none", None, None)
            elif isinstance(upstream, tf.IndexedSlices):
                site._add("indexed_slices", upstream.dtype.name, _static_shape(upstream.values.shape))
                site.has_dense_shape.append(upstream.dense_shape is not None)
                tensors += [upstream.values, upstream.indices]
                if upstream.dense_shape is not None:  # a missing one stays unknown, never guessed
                    tensors.append(upstream.dense_shape)
            else:
                tensor = tf.convert_to_tensor(upstream)
                site._add("dense", tensor.dtype.name, _static_shape(tensor.shape))
                tensors.append(tensor)
        return site, tensors

    def _add(self, kind: str, dtype: str | None, shape: tuple[int | None, ...] | None) -> None:
        self.kinds.append(kind)
        self.dtypes.append(dtype)
        self.shapes.append(shape)

    def records(self, values: Sequence[np.ndarray]) -> tuple[Upstream, ...]:
        flat = iter(values)
        records = []
        has_dense_shape = iter(self.has_dense_shape)
        for kind, dtype, shape in zip(self.kinds, self.dtypes, self.shapes, strict=True):
            if kind == "none":
                records.append(Upstream("none"))
            elif kind == "dense":
                records.append(Upstream("dense", dtype, shape, value=next(flat)))
            else:
                slice_values, indices = next(flat), next(flat)
                dense_shape = tuple(int(d) for d in next(flat)) if next(has_dense_shape) else None
                records.append(Upstream("indexed_slices", dtype, shape, value=slice_values, indices=indices,
                                        dense_shape=dense_shape))
        return tuple(records)


_not_autograph = tf.autograph.experimental.do_not_convert
"""For the probe's own bookkeeping in a gradient function: `tf.saved_model.save` traces registered gradients with
AutoGraph, which would convert it on every save (seconds per spec); the user's gradient, called from
`call_gradient`, is still converted, as TensorFlow converts it in legacy code."""


class Probe:
    """Calls a spec's gradient function for one variant and records every call, at run time.

    Mechanisms call `call_gradient` where a user of that mechanism would call their own gradient code. The
    upstreams are captured by a `tf.numpy_function` placed at the function's entry, which the returned
    gradients depend on, so the record is made when (and each time) the gradient really runs: eagerly, in a
    Session, in a tf.function, or inside a Defun body. A function that is built but never run records zero.

    What the gradient function returns is handed to TensorFlow as it is, so TensorFlow's own reaction shows
    per context; a gradient of the wrong dtype or shape is also noted in `violations`.
    """

    def __init__(self, spec: GradientSpec, variant: str):
        self.spec = spec
        self.variant = variant
        self.traces = 0
        self.calls: list[tuple[Upstream, ...]] = []
        self.call_replicas: list[int | None] = []
        """Per call, the replica (`replica_id_in_sync_group`) that made it under a tf.distribute strategy, or None."""
        self.error: UserCodeError | None = None
        self.violations: list[str] = []
        self._lock = threading.Lock()
        # tf.numpy_function holds its Python callable weakly; a Defun body graph is discarded after it is
        # built, so the probe keeps the recorders alive for as long as the variant can run.
        self._recorders: list[Callable[..., np.int64]] = []
        self.unobservable: str | None = None
        """Why the upstream could not be captured in this context (the calls are then unknown), or None."""
        self.forward_ops: set[str] = set()
        """Names of the graph ops the forward created (graph modes), so a run-time failure of one is the forward's."""
        self._created: list[tf.Variable] = []
        self._next_variable = 0
        self._scope = ""

    def start_build(self) -> None:
        """A new graph or trace of the op begins. The variables the forward created stay its variables where they
        can be used (eager ones, as tf.function lifts them, in any trace: a retrace must not create them again);
        in another v1 graph the forward creates them afresh, in a variable scope of its own (cases of several
        variants share a graph, so `get_variable` names must not meet)."""
        if self._scope and all(_usable_here(variable) for variable in self._created):
            return
        self._created = []
        name = ascii_word(self.spec.name, keep="_.")
        self._scope = f"{name}_{next_number('variable scope', name) + 1}"

    @property
    def created_variables(self) -> list[tf.Variable]:
        """The tf.Variables the forward created or read (spec.takes_variables), in the order it first did."""
        return list(self._created)

    def _create_variable(self, next_creator: Callable[..., Any], **kwargs: Any) -> Any:
        """Variable creator: the forward's variables are created once; later calls of the op (a second use, a
        retrace) get them again in creation order, as a layer reuses its weights."""
        index, self._next_variable = self._next_variable, self._next_variable + 1
        if index < len(self._created):
            return self._created[index]
        variable = next_creator(**kwargs)
        self._created.append(variable)
        return variable

    @contextlib.contextmanager
    def _variables_scope(self) -> Iterator[None]:
        """Around the forward of a spec whose gradient takes `variables`: create its variables once per build, and
        note every variable it reads (a Defun body's `get_variable` creates in the outer graph, past the creator)."""
        if not self.spec.takes_variables:
            yield
            return
        self._next_variable = 0
        if not self._scope:
            self.start_build()
        with VariableWatcher() as watcher:
            with tf.compat.v1.variable_scope(self._scope, reuse=tf.compat.v1.AUTO_REUSE, auxiliary_name_scope=False):
                with tf.variable_creator_scope(self._create_variable):
                    yield
        for variable in watcher.watched_variables():
            if all(variable is not known for known in self._created):
                self._created.append(variable)

    @property
    def where(self) -> str:
        return f"spec `{self.spec.name}`, variant `{self.variant}`"

    def record_call(self, upstreams: tuple[Upstream, ...], replica: int | None = None) -> int:
        """Record one run-time call of the gradient function with the upstreams it received (and the replica that
        made it under a tf.distribute strategy); return how many calls are recorded. For calls observed elsewhere
        (a loaded SavedModel's log, a worker process, a compiled function's returned tensors)."""
        with self._lock:
            self.calls.append(upstreams)
            self.call_replicas.append(replica)
            return len(self.calls)

    def order_calls_by_replica(self) -> None:
        """Sort the recorded calls by replica, each replica's own calls kept in order: replicas run concurrently,
        so the order their calls arrive in (and so the cell's first upstream) varies from run to run. Calls whose
        replica is unknown (a Defun body does not see the strategy) come first, ordered by what they received."""
        with self._lock:
            pairs = sorted(zip(self.call_replicas, self.calls, strict=True),
                           key=lambda pair: (-1, _content_key(pair[1])) if pair[0] is None else (pair[0], ()))
            self.call_replicas[:] = [replica for replica, _ in pairs]
            self.calls[:] = [call for _, call in pairs]

    def note_violation(self, problem: str) -> None:
        """Note a broken gradient contract (a wrong dtype, shape or count), once, in `violations`."""
        if problem not in self.violations:
            self.violations.append(problem)

    def reset_calls(self) -> None:
        """Forget run-time calls (before a graph is run again); build-time facts are kept."""
        with self._lock:
            self.calls.clear()
            self.call_replicas.clear()

    def fail(self, problem: str, cause: BaseException | None = None) -> UserCodeError:
        """Record a user-code problem (first one wins) and return the exception to raise."""
        error = UserCodeError(self.where, problem, refused=cause is not None and refused_by_tensorflow(cause))
        if cause is not None:
            error.__cause__ = cause
        if self.error is None:
            self.error = error
        return error

    def forward(self, *inputs: Any) -> tuple[Any, ...]:
        """Run the spec's forward, normalised to a tuple of tensors, naming the spec if it fails."""
        graph = None if tf.executing_eagerly() else tf.compat.v1.get_default_graph()
        before = len(graph.get_operations()) if graph is not None else 0
        try:
            with self._variables_scope():
                outputs = self.spec.forward(*inputs)
        except BaseException as exc:
            if not user_exception(exc):
                raise
            raise self.fail(f"forward raised {describe_exception(exc)}", exc) from exc
        if graph is not None:
            self.forward_ops.update(op.name for op in graph.get_operations()[before:])
        if isinstance(outputs, (list, tuple)):
            if not outputs:
                raise self.fail("forward returned no outputs; return a tensor or a tuple of tensors")
            return tuple(self._output(index, output) for index, output in enumerate(outputs))
        return (self._output(None, outputs),)

    def _output(self, index: int | None, output: Any) -> Any:
        which = "forward returned" if index is None else f"forward output {index} is"
        if output is None or isinstance(output, (dict, str, bytes)):
            raise self.fail(f"{which} {type(output).__name__}; return a tensor or a tuple of tensors")
        if isinstance(output, (tf.Tensor, tf.Variable)):
            return output
        try:
            return tf.convert_to_tensor(output)
        except Exception as exc:  # noqa: BLE001 - anything not tensor-like is the user's to fix.
            raise self.fail(f"{which} {type(output).__name__}, not a tensor; return a tensor or a tuple of "
                            f"tensors", exc) from exc

    def call_gradient(self, inputs: Sequence[Any], outputs: Sequence[Any], upstreams: Sequence[Any],
                      none_as_zeros: bool = False) -> list[Any]:
        """Record the upstreams, call the user's gradient, check its answer, and return it.

        `none_as_zeros`: return zeros for a None gradient, as a mechanism that cannot return None (a Defun
        `grad_func`) makes its users write; the zeros run after the record, so the call is still counted.
        """
        recorded, inputs, outputs = self._enter(inputs, outputs, upstreams)
        grads = self._check(inputs, self._call(inputs, outputs, upstreams))
        with tf.control_dependencies([recorded]):
            if none_as_zeros:  # of the tensors a ragged or sparse input's gradient goes to: its values
                return [tf.zeros_like(component(inputs[index])) if g is None and index < len(inputs) else
                        None if g is None else tf.convert_to_tensor(component(g)) for index, g in enumerate(grads)]
            return [_after(grad) for grad in grads]

    def call_gradient_with_variables(self, inputs: Sequence[Any], outputs: Sequence[Any], upstreams: Sequence[Any],
                                     variables: Sequence[Any]) -> tuple[list[Any], list[Any]]:
        """`call_gradient` for a gradient taking `variables`: it returns `(input_grads, variable_grads)`."""
        recorded, inputs, outputs = self._enter(inputs, outputs, upstreams)
        returned = self._call(inputs, outputs, upstreams, variables=list(variables))
        if not isinstance(returned, (list, tuple)) or len(returned) != 2:
            raise self.fail(f"gradient takes `variables`, so it returns (input_grads, variable_grads) as "
                            f"tf.custom_gradient's grad(..., variables=) does; it returned {type(returned).__name__}")
        input_grads = self._check(inputs, returned[0])
        variable_grads = self._check(variables, returned[1], what="variable")
        with tf.control_dependencies([recorded]):
            return [_after(g) for g in input_grads], [_after(g) for g in variable_grads]

    @_not_autograph
    def _enter(self, inputs: Sequence[Any], outputs: Sequence[Any],
               upstreams: Sequence[Any]) -> tuple[tf.Tensor, Sequence[Any], Sequence[Any]]:
        """Count the trace and record the upstreams (at run time): what every call of the gradient starts with."""
        self.traces += 1
        site, tensors = _Site.flatten(upstreams)
        return self._record(site, tensors), _as_sequence(inputs), _as_sequence(outputs)

    def _call(self, inputs: Sequence[Any], outputs: Sequence[Any], upstreams: Sequence[Any], **kwargs: Any) -> Any:
        try:
            return self.spec.gradient(inputs, outputs, tuple(upstreams), **kwargs)
        except BaseException as exc:
            if not user_exception(exc):
                raise
            if _missing_op(inputs, outputs) and isinstance(exc, AttributeError):
                raise  # TensorFlow gave no op and the gradient read it: TensorFlow's own failure, as in legacy code
            raise self.fail(f"gradient raised {describe_exception(exc)}", exc) from exc

    @_not_autograph
    def _record(self, site: _Site, tensors: list[tf.Tensor]) -> tf.Tensor:
        sink: UpstreamSink | None = getattr(_returning, "stash", None)
        if sink is not None:
            captured = sink.capture(self, site, tensors)
            if captured is None:
                self.unobservable = sink.unobservable
                return tf.constant(0, tf.int64)
            return captured
        replica = _replica_id()

        def record(*values: np.ndarray) -> np.int64:
            if replica is None:
                return np.int64(self.record_call(site.records([_to_numpy(v) for v in values])))
            return np.int64(self.record_call(site.records([_to_numpy(v) for v in values[1:]]), int(values[0])))

        self._recorders.append(record)
        inputs = tensors if replica is None else [replica, *tensors]
        recorded = tf.numpy_function(record, inputs, tf.int64, stateful=True, name="gradcompat_probe")
        if not tf.executing_eagerly():
            tf.compat.v1.add_to_collection(PROBE_COLLECTION, recorded)
        return recorded

    @_not_autograph
    def _check(self, inputs: Sequence[Any], grads: Any, what: str = "input") -> list[Any]:
        """The gradients as a list; a non-tensor fails; a wrong count, dtype or shape is noted in `violations`
        and handed to TensorFlow unchanged, so each variant shows what TensorFlow does with it. `what` names the
        things `inputs` are (`input`, or `variable` for a gradient's variable_grads)."""
        if grads is None or isinstance(grads, (tf.Tensor, tf.IndexedSlices, np.ndarray)):
            grads = [grads]
        try:
            grads = list(grads)
        except TypeError:
            raise self.fail(f"gradient returned {type(grads).__name__}; return a list with one gradient "
                            f"(or None) per {what}") from None
        # Without an op (a SavedModel traces gradients with op=None) the spec's own inputs say what is expected.
        expected: Sequence[Any] = self.spec.sources if _missing_op(inputs) else inputs
        prefix = "gradient" if what == "input" else f"{what} gradient"
        if len(grads) != len(expected):
            self.note_violation(f"{prefix} returned {len(grads)} value{'s' * (len(grads) != 1)} for "
                          f"{len(expected)} {what}{'s' * (len(expected) != 1)}; return one gradient (or None) "
                          f"per {what}, in {what} order")
        checked: list[Any] = []
        for index, grad in enumerate(grads):
            value = expected[index] if index < len(expected) else None
            if grad is None:
                checked.append(None)
                continue
            if not isinstance(grad, (tf.IndexedSlices, tf.RaggedTensor, tf.SparseTensor)):
                try:
                    grad = tf.convert_to_tensor(grad)
                except (TypeError, ValueError) as exc:
                    raise self.fail(f"{prefix}[{index}] is a {type(grad).__name__}, not a tensor", exc) from exc
            if value is None:
                checked.append(grad)
                continue
            dtype = tf.as_dtype(value.dtype)
            if grad.dtype.base_dtype != dtype.base_dtype:
                self.note_violation(f"{prefix}[{index}] has dtype {grad.dtype.name} but {what} {index} has dtype "
                              f"{dtype.name}; cast it with tf.cast(grad, x.dtype)")
            shape, value_shape = component(grad).shape, component(value).shape  # a composite's: its values'
            if not isinstance(grad, tf.IndexedSlices) and not shape.is_compatible_with(value_shape):
                self.note_violation(f"{prefix}[{index}] has shape {shape} but {what} {index} has shape "
                              f"{value_shape}; a gradient must have its {what}'s shape")
            checked.append(grad)
        return checked


def _usable_here(variable: Any) -> bool:
    """Whether `variable` can be read where the op is being built now: an eager (or lifted) variable in eager code
    and in tf.function traces; a graph variable in its own graph."""
    if not getattr(variable, "_in_graph_mode", False):
        return tf.executing_eagerly() or tf.inside_function()
    graph = tf.compat.v1.get_default_graph()
    while getattr(graph, "outer_graph", None) is not None:
        graph = graph.outer_graph
    return variable.graph is graph


def _as_sequence(values: Sequence[Any]) -> Sequence[Any]:
    """What the gradient function receives: a tuple, or LazyTensors as they are (read only if used)."""
    return values if isinstance(values, LazyTensors) else tuple(values)


def _content_key(call: tuple[Upstream, ...]) -> tuple[tuple[str, str, bytes], ...]:
    """A total order on calls by what they received, for calls nothing else orders."""
    return tuple((upstream.kind, upstream.dtype or "", b"" if upstream.value is None else upstream.value.tobytes())
                 for upstream in call)


def _replica_id() -> tf.Tensor | None:
    """The id of the replica building the gradient function under a tf.distribute strategy (as a tensor the
    record receives at run time), or None outside one (or in a graph the strategy does not reach, a Defun body)."""
    if not tf.distribute.has_strategy() or tf.distribute.in_cross_replica_context():
        return None
    context = tf.distribute.get_replica_context()
    if context is None:
        return None
    return tf.cast(context.replica_id_in_sync_group, tf.int64)


def _after(grad: Any) -> Any:
    """`grad` routed through an identity so it runs after the enclosing control dependencies."""
    if grad is None:
        return None
    if isinstance(grad, tf.IndexedSlices):
        return tf.IndexedSlices(tf.identity(grad.values), grad.indices, grad.dense_shape)
    return tf.identity(grad)
