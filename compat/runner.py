"""`compat.run`: one spec through the chosen variants, one graph or trace per context."""

from __future__ import annotations

import contextlib
import dataclasses
import re
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
import tensorflow as tf
from tensorflow.python.framework import ops

from compat.contexts import ALL_CONTEXTS, Case, Crashed, Failed, Outcome, Ran, Refused, cannot_run
from compat.contexts.base import CANNOT_RUN, Phase
from compat.downstream import Downstream, as_downstream
from compat.exceptions import describe_exception, tensorflow_message
from compat.mechanisms.base import applied
from compat.probe import Probe, UserCodeError
from compat.results import Upstream, VariantResult, intern_array
from compat.spec import GradientSpec
from compat.variants import parse_variant, select

_REFUSALS = (tf.errors.NotFoundError, tf.errors.UnimplementedError)
"""Run-time errors by which TensorFlow refuses a combination (e.g. a Defun's function or gradient not found
inside a tf.function) rather than user code failing: reported as `unsupported`, like build-time refusals."""


_NO_KERNEL = re.compile(r"OpKernel|Could not find device for node")
"""A NotFoundError that is an op without a kernel on this device (`bfloat16` Lgamma on CPU): the spec's op
cannot run here, which eager contexts report as the forward failing; not a combination TensorFlow refuses."""


_DEFUN_ARGUMENTS = re.compile(r"SymbolicGradient.*Expects (arg\[\d+\] to be|\d+ arguments)", re.DOTALL)
"""A Defun's declared grad_func refused at run time the arguments its SymbolicGradient gets (a forward that captures
variables passes their handles too): TensorFlow cannot run that combination."""


def _refused(error: BaseException) -> bool:
    if isinstance(error, tf.errors.InvalidArgumentError) and _DEFUN_ARGUMENTS.search(str(error)):
        return True
    return isinstance(error, _REFUSALS) and not _NO_KERNEL.search(str(error))


_REJECTIONS = (ValueError, TypeError, tf.errors.InvalidArgumentError, tf.errors.InternalError)
"""How TensorFlow rejects a gradient of the wrong shape or dtype (`Incompatible shapes between op input and
calculated input gradient`, `does not match declared output type`), as opposed to refusing a combination."""


def run(spec: GradientSpec, loss: Downstream | Callable[..., Any] | None = None,
        variants: Sequence[str] | str | None = None) -> list[VariantResult]:
    """Run `spec` in each variant under one downstream and return one result per variant.

    Args:
      spec: the custom gradient.
      loss: `loss(*outputs) -> scalar tensor`, the computation after the op (default: sum of the first
        output), or a `Downstream` for `grad_ys`, second order or a dynamic batch.
      variants: `mechanism@context` names (globs like `*@eager_tape` allowed); default all.
    """
    return run_matrix(spec, [as_downstream(loss)], variants)


def run_matrix(spec: GradientSpec, downstreams: Sequence[Downstream],
               variants: Sequence[str] | str | None = None) -> list[VariantResult]:
    """Every (variant, downstream) pair, built in one graph or trace per context; variant-major order."""
    if not isinstance(spec, GradientSpec):
        raise TypeError(f"run() needs a compat.GradientSpec, got {type(spec).__name__}")
    chosen = select(variants if variants is None or isinstance(variants, str) else list(variants))
    by_context: dict[str, list[tuple[int, Probe]]] = {}
    for variant in chosen:
        _, context = parse_variant(variant)
        for index in range(len(downstreams)):
            by_context.setdefault(context.name, []).append((index, Probe(spec, variant)))
    results: dict[tuple[str, int], VariantResult] = {}
    for context_name, planned in by_context.items():
        cases = [Case(build=_builder(probe), inputs=tuple(spec.example_inputs), downstream=downstreams[index],
                      before_run=probe.reset_calls, variables=tuple(spec.variables), probe=probe,
                      extra_sources=_created_by(probe) if spec.takes_variables else None)
                 for index, probe in planned]
        outcomes: list[Outcome] = []
        reason = ALL_CONTEXTS[context_name].unavailable()
        for batch in _batches(cases) if reason is None else ():
            outcomes += _run_batch(context_name, batch)
        if reason is not None:  # worded as the class that once carried it, which reports quote
            outcomes = [cannot_run(f"ContextUnavailable: {reason}") for _ in cases]
        for (index, probe), outcome in zip(planned, outcomes, strict=True):
            results[probe.variant, index] = to_result(probe, downstreams[index], outcome)
    return [results[variant, index] for variant in chosen for index in range(len(downstreams))]


BATCH_ELEMENTS = 8 * 1024 * 1024
"""Input elements one graph or trace may hold: a context runs its cases in batches of about this size, so a
spec with huge inputs builds several graphs in turn instead of one that holds every case's tensors (a
2,000,000-element input in 56 cases of one graph took gigabytes). Small specs run in one batch."""


def _batches(cases: Sequence[Case]) -> Iterator[list[Case]]:
    batch: list[Case] = []
    size = 0
    for case in cases:
        elements = sum(int(value.size) for value in case.inputs) + sum(int(v.size) for v in case.variables)
        if batch and size + elements > BATCH_ELEMENTS:
            yield batch
            batch, size = [], 0
        batch.append(case)
        size += elements
    if batch:
        yield batch


@contextlib.contextmanager
def _scoped_gradient_registrations() -> Iterator[None]:
    """Forget the gradient functions registered while a context ran, once its graphs are done with.

    TensorFlow's gradient registry is global and never forgets: every graph-mode `tf.custom_gradient` call
    registers a `CustomGradient-<uid>` closure over its tensors, which keeps the whole graph alive (40-60 MiB
    per catalogue spec). The names are unique and the graphs are discarded after the run, so the entries
    can never be looked up again.
    """
    registry = getattr(getattr(ops, "_gradient_registry", None), "_registry", None)
    before = set(registry) if isinstance(registry, dict) else None
    try:
        yield
    finally:
        if before is not None and isinstance(registry, dict):
            for name in set(registry) - before:
                del registry[name]


def _run_batch(context_name: str, batch: list[Case]) -> list[Outcome]:
    """The context's outcomes for `batch`; if the context itself fails (a TensorFlow or Keras release it does not
    support, a gradcompat bug), every case of the batch is an error naming it, and other contexts still run."""
    try:
        with _scoped_gradient_registrations():
            return list(ALL_CONTEXTS[context_name].run(batch))
    except UserCodeError:
        raise  # the spec is broken in every context: compat.checker reports it once
    except Exception as exc:  # noqa: BLE001
        failure = Crashed(f"context `{context_name}` failed with TensorFlow {tf.__version__}: "
                          f"{describe_exception(exc)}")
        return [failure for _ in batch]


def _builder(probe: Probe) -> Callable[[], Any]:
    mechanism, _ = parse_variant(probe.variant)

    def build() -> Any:
        probe.start_build()
        return applied(mechanism.build(probe), probe.spec)

    return build


def _created_by(probe: Probe) -> Callable[[Any], list[Any]]:
    """The case's extra sources: the variables the forward created in the current build."""
    return lambda tape: probe.created_variables


def to_result(probe: Probe, downstream: Downstream, outcome: Outcome) -> VariantResult:
    """Classify one outcome (`_classify`); a note the context made is added to the message."""
    result = _classify(probe, downstream, outcome)
    note = outcome.note if isinstance(outcome, (Ran, Failed)) else None
    if note is None:
        return result
    message = f"{result.message}; {note}" if result.message else f"{probe.where}: {note}"
    return dataclasses.replace(result, message=message)


_NOTHING_RAN = Ran(input_grads=())
"""What a case that did not run reports of the context's facts (scale, dtype, replicas): none."""


def _classify(probe: Probe, downstream: Downstream, outcome: Outcome) -> VariantResult:
    """Classify one outcome: user-code problems are `error`, TensorFlow refusing to build is `unsupported`.

    A gradient of the wrong dtype or shape is handed to TensorFlow as returned: where TensorFlow raises,
    the cell is `error` with TensorFlow's message; where it accepts it, `ok`, with the violation kept.
    """
    mechanism, context = probe.variant.split("@")
    ran = outcome if isinstance(outcome, Ran) else _NOTHING_RAN
    scale = ran.upstream_scale
    calls = tuple(probe.calls) if scale is None else tuple(
        tuple(_unscaled(u, scale) for u in call) for call in probe.calls)
    common: dict[str, Any] = dict(spec=probe.spec.name, variant=probe.variant, mechanism=mechanism, context=context,
                  upstreams=calls, calls=len(probe.calls), traces=probe.traces, upstream_scale=scale,
                  compute_dtype=ran.compute_dtype,
                  downstream=downstream.name, violations=tuple(probe.violations), replicas=ran.replicas,
                  scaled_input_grads=ran.scaled_input_grads, global_batch=ran.global_batch)
    if probe.error is not None and probe.error.refused:
        message = f"{probe.where}: {CANNOT_RUN}: {probe.error.problem}"
        return VariantResult(status="unsupported", message=message, **{**common, "violations": ()})
    if probe.error is not None:
        return VariantResult(status="error", message=str(probe.error), **common)
    match outcome:
        case Crashed(reason):
            return VariantResult(status="error", message=f"{probe.where}: {reason}", **common)
        case Refused(reason):
            return VariantResult(status="unsupported", message=f"{probe.where}: {reason}",
                                 **{**common, "violations": ()})
        case Failed(error, phase):
            return _failed(probe, error, phase, common)
        case Ran():
            return _ran(probe, outcome, common)


def _failed(probe: Probe, error: BaseException, phase: Phase, common: dict[str, Any]) -> VariantResult:
    """TensorFlow rejecting a gradient that broke its contract is `error`; refusing to build or run the
    combination, `unsupported`; anything else failing at run time, `error`."""
    reason = tensorflow_message(error)
    broken = (f"; the gradient function broke its contract: {'; '.join(probe.violations)}"
              if probe.violations else "")
    if broken and isinstance(error, _REJECTIONS):
        message = f"{probe.where}: TensorFlow rejected the gradient ({reason}){broken}"
        return VariantResult(status="error", message=message, **common)
    if phase == "build" or _refused(error):
        message = f"{probe.where}: {CANNOT_RUN}: {reason}{broken}"
        return VariantResult(status="unsupported", message=message, **{**common, "violations": ()})
    failed = "failed at run time"
    node = _FAILING_NODE.search(reason)
    if node is not None and node.group(1).rsplit("/", 1)[-1] in probe.forward_ops:  # prefixed in a nested call
        failed = f"the forward's op `{node.group(1)}` failed at run time"
    return VariantResult(status="error", message=f"{probe.where}: {failed}: {reason}{broken}", **common)


def _ran(probe: Probe, outcome: Ran, common: dict[str, Any]) -> VariantResult:
    """The case ran: `not_observable` where the probe could not see every call, `not_called` where TensorFlow
    never ran the gradient function, else `ok` (with any contract violation TensorFlow accepted)."""
    if probe.unobservable is not None:  # calls seen elsewhere (before a loop) are not all of them: none are kept
        message = (f"{probe.where}: upstream not observable: {probe.unobservable}; calls and upstreams are "
                   f"unknown here, input_grads are what TensorFlow computed")
        return VariantResult(status="not_observable", message=message, input_grads=outcome.input_grads,
                             input_grad_kinds=outcome.input_grad_kinds,
                             **{**common, "violations": (), "calls": 0, "upstreams": ()})
    if not probe.calls:
        common["violations"] = ()  # built, never run: nothing TensorFlow did depended on it
    grads = outcome.input_grads
    forms: dict[str, Any] = dict(input_grads=grads, input_grad_kinds=outcome.input_grad_kinds)
    if probe.calls:  # shapes hidden while building (a Defun body) show only in what TensorFlow returned
        common["violations"] += _shape_problems(probe.spec, grads)
    if not probe.calls:
        message = (f"{probe.where}: TensorFlow never ran the gradient function (built {probe.traces} time"
                   f"{'s' * (probe.traces != 1)}); input_grads are what TensorFlow computed instead")
        return VariantResult(status="not_called", message=message, **forms, **common)
    message = ""
    if common["violations"]:
        message = (f"{probe.where}: TensorFlow accepted a gradient that breaks the contract: "
                   f"{'; '.join(common['violations'])}")
    return VariantResult(status="ok", message=message, **forms, **common)


def _unscaled(upstream: Upstream, scale: float) -> Upstream:
    """A recorded upstream divided by the loss scale it arrived multiplied by, in the dtype it was received in."""
    if upstream.value is None:
        return upstream
    return dataclasses.replace(upstream, value=intern_array((upstream.value.astype(np.float64) / scale)
                                                           .astype(upstream.value.dtype)))


def _shape_problems(spec: GradientSpec, grads: Sequence[np.ndarray | None]) -> tuple[str, ...]:
    return tuple(f"TensorFlow returned a gradient of shape {list(np.shape(grad))} for input {index} of shape "
                 f"{list(value.shape)}; a gradient must have its input's shape"
                 for index, (grad, value) in enumerate(zip(grads, spec.sources, strict=False))
                 if grad is not None and np.shape(grad) != value.shape)


_FAILING_NODE = re.compile(r"\{\{node ([^}\s]+)\}\}")
