"""One unit of a verify side, in a process of its own: import the module, run one entry in one context.

A unit starts from a process that has imported TensorFlow but no user code (compat.verify._child forks it),
imports the module as its program would, computes the entry's outputs, then each requested scenario in a
fresh graph (or trace) with the gradient registry as the import left it, so TF1 code that creates variables
without `reuse` or registers a gradient inside the entry runs once per scenario, as in the user's program.
"""

from __future__ import annotations

import dataclasses
import functools
import traceback
import zlib
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import tensorflow as tf
from tensorflow.python.framework import ops
from tensorflow.python.framework.func_graph import FuncGraph

from compat.signature import OutputSignature
from compat.verify._legacy import import_path, missing_tensorflow_symbol
from compat.verify._results import FORWARD, Attempt, SideResult

_MESSAGE_LIMIT = 600
SEED = 20261204
"""The global random seed both sides set before building (TF1 graph seed, TF2 global seed): random ops given an
op-level seed then draw the same numbers on both sides."""


@dataclasses.dataclass(frozen=True)
class Unit:
    """What one process computes: `entry` in `context`, for `scenarios` (FORWARD: its outputs).

    Each scenario runs in a fresh graph, unless the module's import built ops in the default graph: then the
    unit runs one scenario only, in that graph, as the program would (a unit asked for several says `split`).
    `outputs` gives the output dtypes and shapes when they are known (from a forward computed before), so the
    unit computes no forward of its own.
    """

    entry: str
    context: str
    scenarios: tuple[str, ...]
    outputs: tuple[tuple[str, tuple[int, ...]], ...] | None = None
    constants: tuple[tuple[int, Any], ...] = ()
    """(position, value) of the entry's arguments passed as they are, between the tensors."""


@dataclasses.dataclass(frozen=True)
class Module:
    """The user module a side imports: its file, extra directories to import from, and the package a rewrite in
    a temporary file belongs to."""

    side: str
    path: str
    extra_paths: tuple[str, ...] = ()
    package: tuple[str, str] | None = None


def describe(exc: BaseException, path: str = "") -> str:
    """`Type: message`, shortened (TensorFlow errors carry whole graphs), or what a missing TF symbol means."""
    missing = missing_tensorflow_symbol(exc, path) if path else None
    text = missing or f"{type(exc).__name__}: {exc}".strip()
    return text if len(text) <= _MESSAGE_LIMIT else text[:_MESSAGE_LIMIT] + " ..."


def traceback_tail(exc: BaseException, lines: int = 6) -> str:
    return "".join(traceback.format_exception(exc)[-lines:]).rstrip()


def is_refusal(exc: BaseException) -> bool:
    """Whether TensorFlow refused the combination (no gradient defined for an op, not implemented, a function
    not found at run time) rather than the code failing; registering a name twice (KeyError) is a failure."""
    refusals = (LookupError, NotImplementedError, tf.errors.NotFoundError, tf.errors.UnimplementedError)
    return isinstance(exc, refusals) and not isinstance(exc, KeyError)


class VariableSeeder:
    """A variable creator: every float variable the entry creates starts from seeded values chosen by its name
    (the same on both sides, whatever the initializer), and is recorded as a source to differentiate."""

    def __init__(self) -> None:
        self.created: list[Any] = []
        self._seen: dict[str, int] = {}

    def reset(self) -> None:
        self.created, self._seen = [], {}

    def create(self, next_creator: Callable[..., Any], **kwargs: Any) -> Any:
        name = str(kwargs.get("name") or "Variable")
        occurrence = self._seen.get(name, 0)
        self._seen[name] = occurrence + 1
        value = _seeded_value(kwargs, f"{name}#{occurrence}")
        if value is not None:
            kwargs["initial_value"] = value
        variable = next_creator(**kwargs)
        self.created.append(variable)
        return variable

    def sources(self, tape: Any) -> list[Any]:
        """The trainable variables created in this build, those the tape saw read, and in a TF1 graph those of its
        collection (a tape does not see TF1's reference variables being read)."""
        found = [v for v in self.created if getattr(v, "trainable", False)]
        found += [v for v in tape.watched_variables() if v.trainable]
        if not tf.executing_eagerly() and not isinstance(tf.compat.v1.get_default_graph(), FuncGraph):
            found += tf.compat.v1.trainable_variables()
        return found


def _seeded_value(kwargs: dict[str, Any], key: str) -> np.ndarray | None:
    """Seeded values (k + 0.3) / 4, k in -3..2, of the variable's shape, for a float variable; else None."""
    initial = kwargs.get("initial_value")
    shape = tf.TensorShape(kwargs.get("shape"))
    dtype = kwargs.get("dtype")
    if not shape.is_fully_defined() or dtype is None:
        with tf.init_scope():
            tensor = tf.convert_to_tensor(initial() if callable(initial) else initial)
        shape, dtype = tensor.shape, dtype or tensor.dtype
    dtype = tf.as_dtype(dtype).base_dtype
    if not dtype.is_floating or not shape.is_fully_defined():
        return None
    rng = np.random.default_rng([SEED, zlib.crc32(key.encode())])
    return ((rng.integers(-3, 3, size=shape.as_list()) + 0.3) / 4).astype(dtype.as_numpy_dtype)


def run_unit(module_ref: Module, unit: Unit, inputs: tuple[np.ndarray, ...], scenarios: Sequence[Any],
             recorder: Any) -> SideResult:
    """Import the module and compute `unit`; every failure becomes part of the result, never an exception."""
    side = module_ref.side
    seeder = VariableSeeder()
    try:
        with tf.variable_creator_scope(seeder.create):  # variables made at import start seeded too
            module = import_path(module_ref.path, side, module_ref.extra_paths, module_ref.package)
    except BaseException as exc:  # noqa: BLE001 - SystemExit in user code is a result too
        detail = missing_tensorflow_symbol(exc, module_ref.path) or traceback_tail(exc)
        return SideResult(side, error=f"importing {module_ref.path} raised {describe(exc)}\n{detail}")
    if not unit.entry:
        return SideResult(side)  # an import check only
    graph_built = not tf.executing_eagerly() and bool(tf.compat.v1.get_default_graph().get_operations())
    if graph_built and len(unit.scenarios) > 1:
        return SideResult(side, split=True)
    function = getattr(module, unit.entry, None)
    if not callable(function):
        return SideResult(side, entry_errors={unit.entry: (
            f"{module.__file__} defines no function `{unit.entry}`; the entries name module-level functions of "
            f"the original that the rewritten module must keep")})
    if unit.constants:
        function = _with_constants(function, unit.constants)
    result = SideResult(side)
    runner = _EntryRunner(module_ref.path, unit, function, inputs, recorder, graph_built, seeder)
    try:
        runner.run(result, scenarios)
    except BaseException as exc:  # noqa: BLE001 - e.g. SystemExit from the entry, which contexts let through
        result.entry_errors[unit.entry] = f"`{unit.entry}` raised {describe(exc, module_ref.path)}"
    return result


def _with_constants(function: Callable[..., Any], constants: tuple[tuple[int, Any], ...]) -> Callable[..., Any]:
    """`function` called with the tensors it is given and the constants at their positions."""
    def call(*tensors: Any) -> Any:
        arguments, remaining = [], iter(tensors)
        fixed = dict(constants)
        for position in range(len(tensors) + len(constants)):
            arguments.append(fixed[position] if position in fixed else next(remaining))
        return function(*arguments)

    return call


class _EntryRunner:
    """Runs one entry in one context: the forward, then each scenario on a restored gradient registry."""

    def __init__(self, path: str, unit: Unit, function: Callable[..., Any], inputs: tuple[np.ndarray, ...],
                 recorder: Any, in_default_graph: bool, seeder: VariableSeeder) -> None:
        self.path, self.unit, self.function, self.inputs, self.recorder = path, unit, function, inputs, recorder
        self.seeder = seeder
        self.seed = SEED
        self.registry = dict(ops._gradient_registry._registry)  # as the import left it
        self.graph = tf.compat.v1.get_default_graph() if in_default_graph else None

    def op(self, *tensors: Any) -> tuple[Any, ...]:
        """The entry on `tensors`, its outputs flattened, its random ops and new variables seeded."""
        tf.compat.v1.set_random_seed(self.seed)
        with tf.variable_creator_scope(self.seeder.create):
            outputs = self.function(*tensors)
        return tuple(tf.nest.flatten(outputs))

    def reseed(self, offset: int) -> None:
        """Shift the random seed by `offset`; the variables start afresh (the same values as before)."""
        self.seed = SEED + offset
        self.seeder.reset()

    def restore_registry(self) -> None:
        ops._gradient_registry._registry.clear()
        ops._gradient_registry._registry.update(self.registry)

    def run(self, result: SideResult, scenarios: Sequence[Any]) -> None:
        from compat.verify._forward import compute_forward, forward_is_random, signature_of

        entry, context = self.unit.entry, self.unit.context
        self.recorder.current = None  # nothing is attributed to a case until a context builds one
        wanted = [scenario for scenario in scenarios if scenario.name in self.unit.scenarios]
        if self.unit.outputs is not None:
            signature = OutputSignature(tuple(tf.as_dtype(dtype) for dtype, _ in self.unit.outputs),
                                        tuple(shape for _, shape in self.unit.outputs))
            for scenario in wanted:
                result.attempts[(entry, context, scenario.name)] = self._scenario(scenario, signature)
            return
        self.restore_registry()
        self.seeder.reset()
        forward = compute_forward(context, self.op, self.inputs, self.graph, self.path)
        if FORWARD in self.unit.scenarios:
            result.attempts[(entry, context, FORWARD)] = forward
            if result.side == "original" and forward.status == "ok" and self.graph is None:
                self.restore_registry()
                self.seeder.reset()
                note = forward_is_random(context, self.op, self.inputs, forward, self.reseed)
                if note:
                    result.notes[entry] = note
        if forward.status != "ok":
            for scenario in wanted:
                result.attempts[(entry, context, scenario.name)] = Attempt(
                    "error", f"computing the outputs failed, so no gradient was taken: {forward.message}",
                    refused=forward.refused)
            return
        signature = signature_of(forward.values)
        for scenario in wanted:
            result.attempts[(entry, context, scenario.name)] = self._scenario(scenario, signature)

    def _scenario(self, scenario: Any, signature: Any) -> Attempt:
        from compat.contexts import ALL_CONTEXTS, Case, Failed, Ran, Refused
        from compat.contexts.graph_session import GraphSessionContext

        key = (self.unit.entry, self.unit.context, scenario.name)
        reason = scenario.skip_reason_for(signature)
        if reason is not None:
            return Attempt("skipped", reason)
        self.restore_registry()

        def build() -> Callable[..., Any]:
            self.recorder.current = key  # every gradient function built from now on belongs to this case
            self.seeder.reset()
            return self.op

        case = Case(build=build, inputs=self.inputs, downstream=scenario.downstream_for(signature),
                    before_run=functools.partial(self.recorder.reset, key), extra_sources=self.seeder.sources)
        context = ALL_CONTEXTS[self.unit.context]
        if self.graph is not None and isinstance(context, GraphSessionContext):
            (outcome,) = context.run([case], graph=self.graph)
        else:
            (outcome,) = context.run([case])
        calls = self.recorder.calls(key)
        if isinstance(outcome, Failed):
            where = "while building" if outcome.phase == "build" else "while running"
            return Attempt("error", f"{where}: {describe(outcome.error, self.path)}", calls=calls,
                           refused=is_refusal(outcome.error))
        if not isinstance(outcome, Ran):  # a context that refuses or crashes (none of verify's contexts refuse)
            return Attempt("error", outcome.reason, calls=calls, refused=isinstance(outcome, Refused))
        return Attempt("ok", values=tuple(outcome.input_grads), calls=calls,
                       variable_names=outcome.variable_names)
