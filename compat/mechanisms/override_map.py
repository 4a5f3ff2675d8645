"""`tf.RegisterGradient(name)` + `graph.gradient_override_map({op_type: name})`.

The equivalent hand-written user code, overriding one op type (a spec with `op_type="Sign"`):

    @tf.RegisterGradient("ScaledSignGrad")
    def _scaled_sign_grad(op, grad):
        return 0.5 * grad

    def scaled_sign(x):
        graph = tf.compat.v1.get_default_graph()
        with graph.gradient_override_map({"Sign": "ScaledSignGrad"}):
            return tf.sign(x)

Without `op_type`, the whole forward is wrapped generically, as the seed's `{"Identity": ...}` trick
generalised to several inputs and outputs: the forward runs normally, then
`tf.identity_n([*outputs, *inputs])` is built under `{"IdentityN": name}`. The registered gradient
gets the outputs' upstreams, returns the spec's gradients for the inputs and None for the outputs, so
only the custom gradient flows. Variables the forward created (a spec whose gradient takes `variables`) are
read into the IdentityN too, so their gradients flow back to them.

`op` is read only when the spec's gradient reads its inputs or outputs, as a legacy gradient that never
touches `op` would: `tf.saved_model.save` traces registered gradients with `op=None`, which such a gradient
survives and one reading `op.inputs` does not. Where TensorFlow ignores the override (eager tapes look gradients up by
the real op type), IdentityN's own gradient runs and the forward's autodiff gradient is what you get.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import tensorflow as tf

from compat.composite import component, rebuild
from compat.mechanisms.base import BuiltOp, Mechanism, read_variables, registered_probe, unique_name
from compat.probe import LazyTensors, OpTensors, Probe


class OverrideMap(Mechanism):
    name = "override_map"
    native_contexts = frozenset({"v1_session"})
    summary = 'tf.RegisterGradient(name) + graph.gradient_override_map({"OpType": name})'

    def build(self, probe: Probe) -> BuiltOp:
        op_type = probe.spec.op_type
        gradient_name = unique_name(f"gradcompat_{probe.spec.name}")
        # TensorFlow's gradient registry is global and permanent: it gets a weak reference to the probe.
        probe_ref = registered_probe(probe)

        if op_type is not None:
            @tf.RegisterGradient(gradient_name)
            def _override(op, *upstreams):
                return probe_ref().call_gradient(OpTensors(op, "inputs"), OpTensors(op, "outputs"), upstreams)

            def overridden_op(*args):
                inputs = read_variables(probe, args)
                graph = tf.compat.v1.get_default_graph()
                before = len(graph.get_operations())
                with graph.gradient_override_map({op_type: gradient_name}):
                    outputs = probe.forward(*inputs)
                if not tf.executing_eagerly():
                    _check_op_type_created(probe, graph.get_operations()[before:], op_type)
                return outputs

            return overridden_op

        composites: dict[str, tuple[Any, ...]] = {}
        tf.RegisterGradient(gradient_name)(_wrapped_gradient(probe_ref, len(probe.spec.sources), composites))

        def op(*args):
            inputs = read_variables(probe, args)  # this closure keeps the probe alive while the op is used
            outputs = probe.forward(*inputs)
            created = probe.created_variables if probe.spec.takes_variables else []
            graph = tf.compat.v1.get_default_graph()
            with graph.gradient_override_map({"IdentityN": gradient_name}):
                wrapped = tf.identity_n([*outputs, *(component(x) for x in inputs),
                                         *(tf.convert_to_tensor(v) for v in created)])
            if any(component(x) is not x for x in inputs):  # a ragged or sparse input: its values are wrapped
                composites[wrapped[0].op.name] = inputs
            return tuple(wrapped[: len(outputs)])

        return op


def _wrapped_gradient(probe_ref: Callable[[], Probe], num_inputs: int,
                      composites: dict[str, tuple[Any, ...]]) -> Callable[..., list[Any]]:
    """The gradient registered for the IdentityN over (outputs, inputs, reads of the variables the forward
    created): the spec's gradients for the inputs and variables, None for the outputs. A ragged or sparse input
    is wrapped as its values: the spec's gradient gets it rebuilt on them, and its gradient goes to them."""
    def gradient(op: Any, *upstreams: Any) -> list[Any]:
        probe = probe_ref()
        variables = probe.created_variables if probe.spec.takes_variables else []
        num_outputs = len(upstreams) - num_inputs - len(variables)  # IdentityN: one upstream per input
        inputs: Sequence[Any] = OpTensors(op, "inputs", start=num_outputs, stop=num_outputs + num_inputs)
        structure = composites.get(op.name) if op is not None else None
        if structure is not None:
            flat = inputs
            inputs = LazyTensors(lambda: [rebuild(x, t) for x, t in zip(structure, flat, strict=True)], "op.inputs")
        outputs = OpTensors(op, "inputs", stop=num_outputs)
        if not probe.spec.takes_variables:
            grads = probe.call_gradient(inputs, outputs, upstreams[:num_outputs])
            return [None] * num_outputs + [component(g) for g in grads]
        input_grads, variable_grads = probe.call_gradient_with_variables(inputs, outputs, upstreams[:num_outputs],
                                                                         variables)
        return [None] * num_outputs + [component(g) for g in input_grads] + variable_grads

    return gradient


def _check_op_type_created(probe: Probe, created: list[tf.Operation], op_type: str) -> None:
    count = sum(op.type == op_type for op in created)
    if count == 0:
        types = sorted({op.type for op in created})
        raise probe.fail(f"op_type {op_type!r} matches no op that forward creates (it creates {types}); "
                         f"set op_type to one of them, or None to wrap the whole forward")
