"""The upstream-gradient probe: records what a user's gradient function receives, at its entry."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Protocol, TypeVar

import numpy as np
import tensorflow as tf

from compat._exit_guard import ExitCalled
from compat.results import Upstream, intern_array
from compat.spec import GradientSpec


class UserCodeError(Exception):
    """The user's forward or gradient function failed or broke its contract; the message names both."""

    def __init__(self, where: str, problem: str):
        super().__init__(f"{where}: {problem}")
        self.problem = problem


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
            with probe._lock:
                probe.calls.append(site.records([_to_numpy(next(flat)) for _ in range(count)]))
                probe.call_replicas.append(None)


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


def user_exception(exc: BaseException) -> bool:
    """Whether to turn `exc`, raised by user code, into a result: everything but a user's Ctrl-C.

    `SystemExit` from user code included: a `sys.exit(0)` in a gradient must not end the run as a pass.
    """
    return not isinstance(exc, (KeyboardInterrupt, GeneratorExit))


def describe_exception(exc: BaseException) -> str:
    if isinstance(exc, SystemExit):
        return f"SystemExit({exc.code!r}) (user code called sys.exit)"
    if isinstance(exc, ExitCalled):
        return str(exc)
    return f"{type(exc).__name__}: {exc}"


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

    @property
    def where(self) -> str:
        return f"spec `{self.spec.name}`, variant `{self.variant}`"

    def reset_calls(self) -> None:
        """Forget run-time calls (before a graph is run again); build-time facts are kept."""
        with self._lock:
            self.calls.clear()
            self.call_replicas.clear()

    def fail(self, problem: str, cause: BaseException | None = None) -> UserCodeError:
        """Record a user-code problem (first one wins) and return the exception to raise."""
        error = UserCodeError(self.where, problem)
        if cause is not None:
            error.__cause__ = cause
        if self.error is None:
            self.error = error
        return error

    def forward(self, *inputs: Any) -> tuple[Any, ...]:
        """Run the spec's forward, normalised to a tuple of tensors, naming the spec if it fails."""
        try:
            outputs = self.spec.forward(*inputs)
        except BaseException as exc:
            if not user_exception(exc):
                raise
            raise self.fail(f"forward raised {describe_exception(exc)}", exc) from exc
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
        self.traces += 1
        site, tensors = _Site.flatten(upstreams)
        recorded = self._record(site, tensors)
        try:
            grads = self.spec.gradient(tuple(inputs), tuple(outputs), tuple(upstreams))
        except BaseException as exc:
            if not user_exception(exc):
                raise
            raise self.fail(f"gradient raised {describe_exception(exc)}", exc) from exc
        grads = self._check(inputs, grads)
        with tf.control_dependencies([recorded]):
            if none_as_zeros:
                return [tf.zeros_like(x) if g is None else tf.convert_to_tensor(g)
                        for x, g in zip(inputs, grads, strict=True)]
            return [_after(grad) for grad in grads]

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
            with self._lock:
                if replica is None:
                    self.call_replicas.append(None)
                else:
                    self.call_replicas.append(int(values[0]))
                    values = values[1:]
                self.calls.append(site.records([_to_numpy(v) for v in values]))
                return np.int64(len(self.calls))

        self._recorders.append(record)
        inputs = tensors if replica is None else [replica, *tensors]
        recorded = tf.numpy_function(record, inputs, tf.int64, stateful=True, name="gradcompat_probe")
        if not tf.executing_eagerly():
            tf.compat.v1.add_to_collection(PROBE_COLLECTION, recorded)
        return recorded

    def _check(self, inputs: Sequence[Any], grads: Any) -> list[Any]:
        """The gradients as a list, one per input; a wrong count or a non-tensor fails, a wrong dtype or
        shape is noted in `violations` and handed to TensorFlow unchanged."""
        if grads is None or isinstance(grads, (tf.Tensor, tf.IndexedSlices, np.ndarray)):
            grads = [grads]
        try:
            grads = list(grads)
        except TypeError:
            raise self.fail(f"gradient returned {type(grads).__name__}; return a list with one gradient "
                            f"(or None) per input") from None
        if len(grads) != len(inputs):
            raise self.fail(f"gradient returned {len(grads)} value{'s' * (len(grads) != 1)} for "
                            f"{len(inputs)} input{'s' * (len(inputs) != 1)}; return one gradient (or None) "
                            f"per input, in input order")
        checked: list[Any] = []
        for index, (grad, value) in enumerate(zip(grads, inputs, strict=True)):
            if grad is None:
                checked.append(None)
                continue
            if not isinstance(grad, tf.IndexedSlices):
                try:
                    grad = tf.convert_to_tensor(grad)
                except (TypeError, ValueError) as exc:
                    raise self.fail(f"gradient[{index}] is a {type(grad).__name__}, not a tensor", exc) from exc
            expected = tf.as_dtype(value.dtype)
            if grad.dtype.base_dtype != expected.base_dtype:
                self._violate(f"gradient[{index}] has dtype {grad.dtype.name} but input {index} has dtype "
                              f"{expected.name}; cast it with tf.cast(grad, x.dtype)")
            if not isinstance(grad, tf.IndexedSlices) and not grad.shape.is_compatible_with(value.shape):
                self._violate(f"gradient[{index}] has shape {grad.shape} but input {index} has shape "
                              f"{value.shape}; a gradient must have its input's shape")
            checked.append(grad)
        return checked

    def _violate(self, problem: str) -> None:
        if problem not in self.violations:
            self.violations.append(problem)


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
