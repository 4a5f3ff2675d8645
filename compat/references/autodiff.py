"""The `autodiff` reference: TensorFlow's own gradient of a spec's forward, with no custom gradient attached."""

from __future__ import annotations

from typing import Any

from compat.contexts.base import Case, Failed
from compat.contexts.eager import EagerTape
from compat.downstream import Downstream
from compat.exceptions import describe_exception
from compat.mechanisms.base import applied
from compat.probe import Probe, UserCodeError
from compat.references.base import ForwardValue
from compat.spec import GradientSpec


class ForwardProbe(Probe):
    """A probe that only runs the forward (its variables created once, as in the mechanisms), never a gradient."""

    def __init__(self, spec: GradientSpec, reference: str):
        super().__init__(spec, f"{reference}@eager_tape")
        self.reference = reference

    @property
    def where(self) -> str:
        return f"spec `{self.spec.name}`, reference `{self.reference}`"

    def plain_forward(self, *args: Any) -> tuple[Any, ...]:
        """The forward on the op's arguments (inputs, then variables, read as values)."""
        num_inputs = self.spec.num_inputs
        values = [*args[:num_inputs], *(_read(variable) for variable in args[num_inputs:])]
        return self.forward(*values)


def _read(variable: Any) -> Any:
    import tensorflow as tf

    return tf.convert_to_tensor(variable)


def autodiff(spec: GradientSpec, downstream: Downstream) -> ForwardValue:
    """TensorFlow's gradient of `model(forward)` under `downstream`, in an eager GradientTape: the same inputs,
    variables, dtype, `grad_ys` and order as the cells (custom gradients inside the forward itself stay)."""
    probe = ForwardProbe(spec, "autodiff")

    def build() -> Any:
        probe.start_build()
        return applied(probe.plain_forward, spec)

    extra = (lambda tape: probe.created_variables) if spec.takes_variables else None
    case = Case(build=build, inputs=tuple(spec.example_inputs), downstream=downstream,
                variables=tuple(spec.variables), extra_sources=extra)
    outcome = EagerTape.run_one(case)
    common: dict[str, Any] = dict(reference="autodiff", spec=spec.name, scenario=downstream.name)
    if probe.error is not None:
        return ForwardValue(status="error", message=f"{probe.where}: {probe.error.problem}", **common)
    if isinstance(outcome, Failed):
        return _failed(probe, outcome.error, common)
    return ForwardValue(status="ok", input_grads=outcome.input_grads, **common)


def _failed(probe: ForwardProbe, error: BaseException, common: dict[str, Any]) -> ForwardValue:
    """No gradient registered for an op of the forward is TensorFlow's answer, `not_differentiable`; the rest is
    an `error` of the reference, with TensorFlow's words either way."""
    text = describe_exception(error)
    if isinstance(error, LookupError) or "No gradient defined" in text:
        return ForwardValue(status="not_differentiable", message=f"{probe.where}: TensorFlow cannot differentiate "
                            f"the forward: {text}", reason="no gradient registered", **common)
    if isinstance(error, UserCodeError):
        return ForwardValue(status="error", message=str(error), **common)
    return ForwardValue(status="error", message=f"{probe.where}: the forward's gradient failed: {text}", **common)

