"""What every execution context provides: run built ops under downstreams and return input gradients."""

from __future__ import annotations

import abc
import contextlib
import dataclasses
import importlib.util
from collections.abc import Callable, Sequence
from typing import Any, Literal, TypeAlias

import numpy as np
import tensorflow as tf

from compat.downstream import Downstream
from compat.mechanisms.base import BuiltOp
from compat.probe import Probe
from compat.registry import CONTEXT_INFO
from compat.results import ReplicaRecord, intern_array

Phase = Literal["build", "run"]


@dataclasses.dataclass(frozen=True, eq=False)
class Case:
    """One gradient computation: a fresh op built by `build()`, fed `inputs`, under `downstream`.

    `variables` are initial values of the tf.Variables the op reads; the context creates them where its
    mode needs them (in the graph, outside the tf.function, eagerly) and differentiates with respect to
    the inputs, then the variables.

    `before_run` is called before each attempt to run the case (a context may retry a case alone after a
    batched run failed), so run-time records start afresh. `probe` records the gradient function's calls
    (a distributed context reads them between its runs, each worker's own records included). Cases of one
    probe's variant tend to fail alike, so a context that must find the failing cases of a batch splits it by
    variant first.
    """

    build: Callable[[], BuiltOp]
    inputs: tuple[np.ndarray, ...]
    downstream: Downstream
    before_run: Callable[[], None] = lambda: None
    variables: tuple[np.ndarray, ...] = ()
    probe: Probe | None = None
    extra_sources: Callable[[Any], Sequence[Any]] | None = None
    """Called once the loss is built, with a tape that recorded it (for `tf.gradients`, one that only watched
    which variables were read): more tf.Variables to
    differentiate with respect to, after the inputs and `variables` (those the forward created or read itself);
    their gradients follow the inputs' in `Ran.input_grads`, named in `Ran.variable_names`."""

    @property
    def sources(self) -> tuple[np.ndarray, ...]:
        """What gradients are taken with respect to: the inputs, then the variables' initial values."""
        return (*self.inputs, *self.variables)


@dataclasses.dataclass(frozen=True, eq=False)
class Ran:
    """The context ran the case: its input gradients (dense numpy or None each, with the form TensorFlow returned
    each in) and what the context did to them."""

    input_grads: tuple[np.ndarray | None, ...]
    input_grad_kinds: tuple[str, ...] = ()
    upstream_scale: float | None = None
    """The factor the context multiplied every upstream by (a mixed-precision loss scale, Keras' mean over the
    batch), or None."""
    compute_dtype: str | None = None
    """The float dtype the context computes in by design (`float16` under a mixed-precision policy), or None."""
    replicas: tuple[ReplicaRecord, ...] = ()
    """A distributed context's per-replica records (both loss scalings); `input_grads` are then reduced."""
    scaled_input_grads: tuple[np.ndarray | None, ...] = ()
    global_batch: int | None = None
    note: str | None = None
    """Something the context observed that the cell's message must say (e.g. two ways of differentiating
    disagreed), or None."""
    variable_names: tuple[str, ...] = ()
    """The names of the `Case.extra_sources` variables whose gradients end `input_grads`, in that order."""


@dataclasses.dataclass(frozen=True, eq=False)
class Failed:
    """Building or running the case raised `error`, in `phase`. The runner tells TensorFlow refusing the
    combination (`unsupported`) from a failure (`error`) by the phase and the error."""

    error: BaseException
    phase: Phase
    note: str | None = None
    """As `Ran.note`."""


@dataclasses.dataclass(frozen=True)
class Refused:
    """The context knows, without trying, that it cannot run this combination (model.fit has no second order, a
    case does not shard over replicas, a package is missing): an `unsupported` cell."""

    reason: str
    """The words the cell's message gives after the variant (`cannot_run` words them as TensorFlow's refusals)."""


@dataclasses.dataclass(frozen=True)
class Crashed:
    """The context itself raised instead of returning outcomes (a TensorFlow or Keras release it does not
    support, a gradcompat bug): an `error` cell naming the context."""

    reason: str


Outcome: TypeAlias = Ran | Failed | Refused | Crashed
"""What a context reports for one case. Where the upstream was not observable the outcome is a `Ran`, and the
probe says why (`Probe.unobservable`)."""

CANNOT_RUN = "TensorFlow cannot run this combination"


def cannot_run(reason: str) -> Refused:
    """A refusal worded as the runner words TensorFlow's own (`TensorFlow cannot run this combination: ...`)."""
    return Refused(f"{CANNOT_RUN}: {reason}")


@dataclasses.dataclass(frozen=True)
class VariableSource:
    """A tf.Variable the forward created or read (`Case.extra_sources`), as the outcome reports it."""

    name: str
    shape: tuple[int, ...]


def grads_outcome(grads: Sequence[Any], sources: Sequence[np.ndarray],
                  variables: Sequence[VariableSource] = ()) -> Ran:
    """A `Ran` from computed gradients (eager tensors, Session values, IndexedSlices or None): each as
    a dense numpy array, with its form (`none`, `dense`, `indexed_slices`) kept apart. The gradients of
    `variables` (extra sources) follow those of `sources`."""
    arrays: list[np.ndarray | None] = []
    kinds: list[str] = []
    shapes = [*(source.shape for source in sources), *(variable.shape for variable in variables)]
    for grad, shape in zip(grads, shapes, strict=True):
        if grad is None:
            arrays.append(None)
            kinds.append("none")
        elif hasattr(grad, "indices"):  # tf.IndexedSlices or a Session's IndexedSlicesValue
            values, indices = np.asarray(grad.values), np.asarray(grad.indices)
            if grad.dense_shape is not None:
                shape = tuple(int(d) for d in np.asarray(grad.dense_shape))
            dense = np.zeros(shape, dtype=values.dtype)
            np.add.at(dense, indices, values)
            arrays.append(intern_array(dense))
            kinds.append("indexed_slices")
        else:
            arrays.append(intern_array(np.asarray(grad.numpy() if hasattr(grad, "numpy") else grad)))
            kinds.append("dense")
    return Ran(input_grads=tuple(arrays), input_grad_kinds=tuple(kinds),
                   variable_names=tuple(variable.name for variable in variables))


class Context(abc.ABC):
    """An execution context: where and how the gradient is requested (Session, tape, tf.function...)."""

    name: str
    summary: str
    requires: tuple[str, ...] = ()
    """Python packages the context needs beyond TensorFlow (e.g. `keras`)."""

    @property
    def uses_tape(self) -> bool:
        """Whether a tf.GradientTape asks for the gradient (tapes ignore gradient_override_map): the registry's."""
        return CONTEXT_INFO[self.name].uses_tape

    @property
    def native(self) -> bool:
        """False for a context that changes the numbers by design (mixed precision): every variant there is
        *cross*, its differences reported as what the change does, never counted as a migration failure. The
        registry's (compat/registry.py)."""
        return CONTEXT_INFO[self.name].native

    @property
    def opt_in(self) -> bool:
        """True for a context left out of the default variants (`compat.VARIANTS`): it runs only when named
        (`--variants='*@mirrored_tape'`), because it multiplies a run's time. The registry's."""
        return CONTEXT_INFO[self.name].opt_in

    def unavailable(self) -> str | None:
        """Why the context cannot run here (a required package is missing), or None."""
        missing = [name for name in self.requires if importlib.util.find_spec(name) is None]
        if missing:
            return f"context `{self.name}` needs {', '.join(missing)}: pip install {' '.join(missing)}"
        return None

    @abc.abstractmethod
    def run(self, cases: Sequence[Case]) -> list[Outcome]:
        """Run every case, as few graphs/traces as possible; one failing case never sinks the others."""

    def __repr__(self) -> str:
        return f"<context {self.name}>"


def input_shape(value: np.ndarray, downstream: Downstream) -> list[int | None]:
    shape: list[int | None] = list(value.shape)
    if downstream.dynamic_batch and shape:
        shape[0] = None
    return shape


def densify(grad: Any) -> Any:
    if isinstance(grad, tf.IndexedSlices):
        return tf.convert_to_tensor(grad)
    return grad


def _second_order_target(grads: Sequence[Any]) -> Any:
    """The sum of the first-order gradients, or None when none reached an input (nothing to differentiate)."""
    terms = [tf.reduce_sum(tf.cast(densify(g), tf.float32)) for g in grads if g is not None]
    return tf.add_n(terms) if terms else None


def _target_and_grad_ys(case: Case, sources: Sequence[Any]) -> tuple[Any, Any]:
    outputs = case.build()(*sources)
    target = case.downstream.loss(*outputs)
    grad_ys = case.downstream.output_gradients(target) if case.downstream.output_gradients else None
    return target, grad_ys


@dataclasses.dataclass(frozen=True)
class Gradients:
    """The input gradients a case reports, plus `anchors`: first-order gradients of a second-order case,
    which a Session must also run, since the second-order gradient need not depend on them. The gradients of
    `variables` (the case's extra sources) follow the inputs'."""

    grads: list[Any]
    anchors: list[Any] = dataclasses.field(default_factory=list)
    variables: tuple[VariableSource, ...] = ()


def _extra_sources(case: Case, tape: Any) -> list[Any]:
    """The case's extra sources (variables the forward created or read), each once, in a stable order."""
    if case.extra_sources is None:
        return []
    unique: dict[int, Any] = {}
    for variable in case.extra_sources(tape):
        unique.setdefault(id(variable), variable)
    return list(unique.values())


def _described(variables: Sequence[Any]) -> tuple[VariableSource, ...]:
    return tuple(VariableSource(variable.name, tuple(variable.shape.as_list())) for variable in variables)


def symbolic_gradients(case: Case, inputs: Sequence[Any], gradients: Callable[..., list[Any]]) -> Gradients:
    """Gradients for `inputs` (tensors, then tf.Variables) and the case's extra sources with a
    `tf.gradients`-style function (v1 or v2), first or second order."""
    if case.extra_sources is None:
        target, grad_ys = _target_and_grad_ys(case, inputs)
        extra = []
    else:  # a tape that only watches which variables the forward reads
        with tf.GradientTape(watch_accessed_variables=True) as watcher:
            target, grad_ys = _target_and_grad_ys(case, inputs)
        extra = _extra_sources(case, watcher)
    sources = [*inputs, *extra]
    grads = gradients(target, sources, grad_ys=grad_ys)
    if case.downstream.order == 1:
        return Gradients(list(grads), variables=_described(extra))
    total = _second_order_target(grads)
    second = [None] * len(sources) if total is None else gradients(total, sources)
    return Gradients(list(second), anchors=[densify(g) for g in grads if g is not None], variables=_described(extra))


def tf_gradients(case: Case, inputs: Sequence[Any]) -> Gradients:
    """`symbolic_gradients` with TF2's `tf.gradients`, as inside a `tf.function`."""
    return symbolic_gradients(case, inputs, tf.gradients)


TapeRequest = Callable[[Any, Any, Sequence[Any], Any], Sequence[Any]]
"""`request(tape, target, sources, grad_ys) -> gradients`: how a context asks a tape for the gradients."""


def tape_gradient(tape: Any, target: Any, sources: Sequence[Any], grad_ys: Any) -> Sequence[Any]:
    """`tape.gradient`, as TF2 code asks for a gradient."""
    return tape.gradient(target, sources, output_gradients=grad_ys)


def tape_gradients(case: Case, inputs: Sequence[Any], request: TapeRequest = tape_gradient,
                   persistent: bool = False) -> Gradients:
    """Gradients for `inputs` (tensors, then tf.Variables) and the case's extra sources with tf.GradientTape
    (nested tapes for second order), in any mode; `request` asks each tape (`tape.gradient` by default),
    `persistent` tapes where it asks more than once (a Jacobian's loop)."""
    second_order = case.downstream.order == 2
    outer: Any = tf.GradientTape(persistent=persistent) if second_order else contextlib.nullcontext()
    with outer as outer_tape:
        if second_order:
            outer_tape.watch(list(inputs))
        with tf.GradientTape(persistent=persistent) as tape:
            tape.watch(list(inputs))
            target, grad_ys = _target_and_grad_ys(case, inputs)
        sources = [*inputs, *_extra_sources(case, tape)]
        variables = _described(sources[len(inputs):])
        grads = request(tape, target, sources, grad_ys)
        if not second_order:
            return Gradients(list(grads), variables=variables)
        total = _second_order_target(grads)
    second = [None] * len(sources) if total is None else request(outer_tape, total, sources, None)
    return Gradients(list(second), anchors=[densify(g) for g in grads if g is not None], variables=variables)
