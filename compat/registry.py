"""Names and metadata of mechanisms, contexts, variants, scenarios, references, dtypes and catalogue specs.

This module imports without TensorFlow: command lines, listings, the guide and `compat.verify` read names here.
The implementations (`compat.mechanisms`, `compat.contexts`, `compat.scenarios`...) load when first used;
tests/test_registry.py checks every registered name has an implementation and every implementation a name.
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Iterable

from compat.errors import UnknownNameError


@dataclasses.dataclass(frozen=True)
class MechanismInfo:
    """A mechanism: how a custom gradient is written. `native_contexts`: where it is used as documented (its
    variants there are native); None means every context. `label`: how the guide names it."""

    name: str
    label: str
    native_contexts: frozenset[str] | None
    implementation: str
    """`module:Class` of its compat.mechanisms.Mechanism."""


@dataclasses.dataclass(frozen=True)
class ContextInfo:
    """An execution context: where and how gradients are requested.

    `uses_tape`: whether a tf.GradientTape asks for the gradient (tapes ignore gradient_override_map). `native`:
    False for a context that changes the numbers by design (every variant there is cross). `opt_in`:
    left out of the default variants (it multiplies a run's time). `distributed`: runs under a tf.distribute
    strategy. `needs_logical_cpus`: its process must split its CPU into 2 logical devices before any op.
    """

    name: str
    label: str
    implementation: str
    uses_tape: bool = True
    native: bool = True
    opt_in: bool = False
    distributed: bool = False
    needs_logical_cpus: bool = False


_V1_GRAPH = "compat.contexts.graph_session"
_MECHANISMS = (
    MechanismInfo("defun_grad_func", "Defun grad_func", frozenset({"v1_session"}),
                  "compat.mechanisms.defun_grad_func:DefunGradFunc"),
    MechanismInfo("defun_python_grad_func", "Defun python_grad_func", frozenset({"v1_session"}),
                  "compat.mechanisms.defun_python_grad_func:DefunPythonGradFunc"),
    MechanismInfo("override_map", "RegisterGradient", frozenset({"v1_session"}),
                  "compat.mechanisms.override_map:OverrideMap"),
    MechanismInfo("custom_gradient", "tf.custom_gradient", None, "compat.mechanisms.custom_gradient:CustomGradient"),
)
_CONTEXTS = (
    ContextInfo("v1_session", "v1 Session", f"{_V1_GRAPH}:V1Session", uses_tape=False),
    ContextInfo("v1_tape", "tape in v1 graph", f"{_V1_GRAPH}:V1Tape"),
    ContextInfo("eager_tape", "eager tape", "compat.contexts.eager:EagerTape"),
    ContextInfo("function_tape", "tape in tf.function", "compat.contexts.function:FunctionTape"),
    ContextInfo("function_gradients", "tf.gradients in tf.function", "compat.contexts.function:FunctionGradients",
                uses_tape=False),
    ContextInfo("outer_tape", "tape outside tf.function", "compat.contexts.wrapped:OuterTape"),
    ContextInfo("wrap_function", "tf.compat.v1.wrap_function", "compat.contexts.wrapped:WrapFunction"),
    ContextInfo("xla_tape", "tape in jit-compiled tf.function", "compat.contexts.xla:XlaTape"),
    ContextInfo("xla_gradients", "tf.gradients in jit-compiled tf.function", "compat.contexts.xla:XlaGradients",
                uses_tape=False),
    ContextInfo("mixed_precision", "Keras mixed precision", "compat.contexts.mixed_precision:MixedPrecision",
                native=False),
    ContextInfo("keras_fit", "Keras fit", "compat.contexts.keras_fit:KerasFit", native=False),
    ContextInfo("saved_model", "SavedModel", "compat.contexts.saved_model:SavedModel"),
    ContextInfo("saved_model_stripped", "SavedModel without custom gradients",
                "compat.contexts.saved_model:SavedModelStripped", native=False),
    ContextInfo("jacobian_loop", "Jacobian (loop)", "compat.contexts.jacobian:JacobianLoop", native=False, opt_in=True),
    ContextInfo("jacobian_pfor", "Jacobian (pfor)", "compat.contexts.jacobian:JacobianPfor", native=False, opt_in=True),
    ContextInfo("forward_accumulator", "ForwardAccumulator", "compat.contexts.forward_mode:ForwardAccumulatorContext",
                uses_tape=False, native=False, opt_in=True),
    ContextInfo("recompute_grad", "tf.recompute_grad", "compat.contexts.recompute:RecomputeGrad", native=False),
    ContextInfo("vectorized_map", "tf.vectorized_map", "compat.contexts.recompute:VectorizedMap", native=False,
                opt_in=True),
    ContextInfo("mirrored_tape", "MirroredStrategy tape", "compat.distribute.mirrored:MirroredTape", native=False,
                opt_in=True, distributed=True, needs_logical_cpus=True),
    ContextInfo("mirrored_v1", "v1 MirroredStrategy", "compat.distribute.mirrored:MirroredV1", uses_tape=False,
                native=False, opt_in=True, distributed=True, needs_logical_cpus=True),
    ContextInfo("multi_worker", "MultiWorkerMirroredStrategy", "compat.distribute.multi_worker:MultiWorker",
                native=False, opt_in=True, distributed=True),
)

MECHANISM_INFO: dict[str, MechanismInfo] = {info.name: info for info in _MECHANISMS}
"""Every mechanism by name, in registry order."""

CONTEXT_INFO: dict[str, ContextInfo] = {info.name: info for info in _CONTEXTS}
"""Every context by name (the opt-in ones included), in registry order."""

MECHANISM_NAMES: tuple[str, ...] = tuple(MECHANISM_INFO)
ALL_CONTEXT_NAMES: tuple[str, ...] = tuple(CONTEXT_INFO)
CONTEXT_NAMES: tuple[str, ...] = tuple(name for name, info in CONTEXT_INFO.items() if not info.opt_in)
"""The default contexts; the opt-in ones run only when named."""

BASIC_CONTEXTS: tuple[str, ...] = ("v1_session", "v1_tape", "eager_tape", "function_tape", "function_gradients")
"""The contexts a TF1 gradient meets when migrated by hand: a v1 Session, a tape in a v1 graph, an eager tape, a
tape and tf.gradients in tf.function (what compat.verify runs a rewrite in, and the guide's context table)."""

DEFUN_MECHANISMS: tuple[str, ...] = ("defun_grad_func", "defun_python_grad_func")
"""The mechanisms written with `function.Defun`."""

TF1_MECHANISMS: tuple[str, ...] = tuple(name for name, info in MECHANISM_INFO.items()
                                        if info.native_contexts == frozenset({"v1_session"}))
"""The TF1 mechanisms (native in a v1 Session only): what a migration rewrites."""

ALL_VARIANTS: tuple[str, ...] = tuple(f"{m}@{c}" for m in MECHANISM_NAMES for c in ALL_CONTEXT_NAMES)
"""Every variant name, mechanism-major, in registry order, opt-in contexts included."""

VARIANTS: tuple[str, ...] = tuple(f"{m}@{c}" for m in MECHANISM_NAMES for c in CONTEXT_NAMES)
"""The default variants: every mechanism in every context but the opt-in ones (`OPT_IN_VARIANTS`)."""

OPT_IN_VARIANTS: tuple[str, ...] = tuple(v for v in ALL_VARIANTS if v not in VARIANTS)
"""Variants of the opt-in contexts (tf.distribute, Jacobians, forward mode): chosen only by name or `*@context`."""


def is_native_pair(mechanism: str, context: str) -> bool:
    """Whether `mechanism@context` is native: the mechanism used as documented, in a context that keeps numbers."""
    native_contexts = MECHANISM_INFO[mechanism].native_contexts
    return CONTEXT_INFO[context].native and (native_contexts is None or context in native_contexts)


NATIVE_VARIANTS: tuple[str, ...] = tuple(f"{m}@{c}" for m in MECHANISM_NAMES for c in CONTEXT_NAMES
                                         if is_native_pair(m, c))
"""Variants where the mechanism is used the way it is documented to work, in a context meant to keep the
numbers (not mixed precision); the others are *cross*."""

SCENARIO_NAMES: tuple[str, ...] = (
    "sum", "scaled", "weighted", "mean", "square", "broadcast", "reduce_axis", "gather", "gather_twice", "reuse",
    "unused_output", "all_outputs", "stop_gradient", "grad_ys", "second_order", "dynamic_batch")
"""Every downstream scenario (compat.scenarios.SCENARIOS, which needs TensorFlow), in report order."""

DTYPE_NAMES: tuple[str, ...] = ("float32", "float64", "float16", "bfloat16")
"""The dtype axis (compat.dtypes.DTYPES), default first."""


def did_you_mean(name: str, choices: Iterable[str]) -> str:
    """` (did you mean `x`?)` for the closest of `choices`, or "" when none is close."""
    close = difflib.get_close_matches(name, list(choices), n=1, cutoff=0.6)
    return f" (did you mean `{close[0]}`?)" if close else ""


def lookup(name: str, choices: Iterable[str], what: str, argument: str) -> str:
    """`name` if it is one of `choices`; else an UnknownNameError naming `argument` (the flag or parameter the
    name came from), the closest valid name and every valid one."""
    valid = list(choices)
    if name in valid:
        return name
    raise UnknownNameError(f"{argument}: unknown {what} {name!r}{did_you_mean(name, valid)}; choose from "
                           f"{', '.join(valid)}", argument)


def context_info(name: str, argument: str = "context") -> ContextInfo:
    """The metadata of context `name`; an UnknownNameError with the closest valid name otherwise."""
    return CONTEXT_INFO[lookup(name, CONTEXT_INFO, "context", argument)]


def mechanism_info(name: str, argument: str = "mechanism") -> MechanismInfo:
    """The metadata of mechanism `name`; an UnknownNameError with the closest valid name otherwise."""
    return MECHANISM_INFO[lookup(name, MECHANISM_INFO, "mechanism", argument)]


def needs_logical_cpus(variants: Iterable[str]) -> bool:
    """Whether any variant or `mechanism@context` pattern names a context that needs 2 logical CPUs."""
    return any(CONTEXT_INFO[c].needs_logical_cpus for c in (v.partition("@")[2] for v in variants)
               if c in CONTEXT_INFO)


def check_names(names: Iterable[str], choices: Iterable[str], what: str, argument: str) -> tuple[str, ...]:
    """`names` as a tuple when each is one of `choices`; else an UnknownNameError naming `argument`, every unknown
    name, the closest valid name to the first and every valid one."""
    valid, given = list(choices), tuple(names)
    unknown = [name for name in given if name not in valid]
    if unknown:
        raise UnknownNameError(f"{argument}: unknown {what}(s) {unknown}{did_you_mean(unknown[0], valid)}; choose "
                               f"from {valid}", argument)
    return given
