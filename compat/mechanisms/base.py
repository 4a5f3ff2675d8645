"""What every mechanism provides: build a spec's op, the way a user of that pattern writes it."""

from __future__ import annotations

import abc
import weakref
from collections.abc import Callable
from typing import Any

import tensorflow as tf
from tensorflow.python.framework import function

from compat.composite import assembled, component, is_composite
from compat.naming import ascii_word, next_number
from compat.probe import Probe, UserCodeError
from compat.signature import forward_signature

BuiltOp = Callable[..., tuple[Any, ...]]
"""`op(*inputs) -> tuple of outputs`: a spec's forward with its custom gradient attached."""



def unique_name(prefix: str) -> str:
    """A name valid as a TensorFlow op/function/gradient name, unique in this process: `gc_<prefix>_<n>`.

    TensorFlow's gradient registry is global: registering a name twice raises `KeyError: Registering two
    gradient with name ...`, so every build (a notebook re-run included) gets a fresh name. `n` counts the
    names made with this prefix only, so a spec's names do not depend on which other specs this process built
    before it: a check spread over worker processes (`jobs=`) names every op as one process does.
    """
    # Node and function names must start with a letter or digit and hold only ASCII word characters; a spec
    # may be named anything (`_private`, `градиент`, `<op>`), so non-ASCII and odd characters are dropped.
    cleaned = ascii_word(prefix)[:48]
    return f"gc_{cleaned}_{next_number('op', cleaned)}"


def registered_probe(probe: Probe) -> Callable[[], Probe]:
    """A weak reference to `probe` for TensorFlow's global registries, which never forget a function.

    The built op holds the probe strongly, so it lives exactly as long as something can still ask for the
    gradient; afterwards the registry entry is inert instead of keeping every graph it saw alive.
    """
    reference = weakref.ref(probe)

    def get() -> Probe:
        found = reference()
        if found is None:
            raise RuntimeError(f"the gradcompat op for spec `{probe_name}` was garbage-collected; keep the op "
                               f"returned by Mechanism.build alive while you take its gradient")
        return found

    probe_name = probe.spec.name
    return get


def as_outputs(outputs: Any) -> tuple[Any, ...]:
    """A forward's result as a tuple of outputs."""
    return tuple(outputs) if isinstance(outputs, (list, tuple)) else (outputs,)


def applied(op: BuiltOp, spec: Any, modelled: bool = True) -> BuiltOp:
    """`op(*inputs, *variables)` called on the sources a context differentiates: ragged and sparse inputs are
    assembled from their values (`compat.RaggedArray`, `compat.SparseArray`), then, with `modelled`, used as
    `spec.model` uses the op: `model(call, *inputs)`, where `call(*xs)` is the op on `xs` (and the variables),
    returning one tensor or a tuple as the forward does."""
    model = spec.model if modelled else None
    examples = spec.example_inputs
    if model is None and not any(is_composite(value) for value in examples):
        return op
    num_inputs = spec.num_inputs

    def used(*sources: Any) -> tuple[Any, ...]:
        inputs = [value.assemble(x) if is_composite(value) else x for value, x in zip(examples, sources, strict=False)]
        variables = sources[num_inputs:]
        if model is None:
            return as_outputs(op(*inputs, *variables))

        def call(*xs: Any) -> Any:
            outputs = as_outputs(op(*xs, *variables))
            return outputs[0] if len(outputs) == 1 else outputs

        return as_outputs(model(call, *inputs))

    return used


def defun_op(probe: Probe, func_name: str, **gradient: Any) -> BuiltOp:
    """The spec's forward as a `function.Defun` over its inputs and variable values, with `gradient` (either
    `grad_func=` or `python_grad_func=`), called the way Defun users call it."""
    examples = probe.spec.example_inputs

    @function.Defun(*dtypes_of(probe.spec.sources), func_name=func_name, **gradient)
    def forward_op(*inputs):
        return probe.forward(*assembled(examples, inputs))

    # A Defun takes tensors of its declared dtypes: a ragged or sparse input goes in as its values, rebuilt inside
    # around the spec's structure, as Defun users must write it.
    return lambda *args: as_outputs(forward_op(*(component(x) for x in read_variables(probe, args))))


def dtypes_of(values: Any) -> list[tf.DType]:
    return [tf.as_dtype(value.dtype) for value in values]


def read_variables(probe: Probe, args: tuple[Any, ...]) -> tuple[Any, ...]:
    """`op(*inputs, *variables)` arguments with each tf.Variable replaced by a read of its value."""
    num_inputs = probe.spec.num_inputs
    return (*args[:num_inputs], *(tf.convert_to_tensor(variable) for variable in args[num_inputs:]))


def output_dtypes(probe: Probe) -> list[tf.DType]:
    """The dtypes of the spec's forward outputs, found by building it once in a scratch graph."""
    try:
        return list(forward_signature(probe.spec).dtypes)
    except UserCodeError as exc:
        raise probe.fail(exc.problem, exc) from exc


class Mechanism(abc.ABC):
    """A way to attach a custom gradient to TensorFlow ops.

    Attributes:
      name: registry key, the part of a variant name before `@`.
      native_contexts: the contexts where the mechanism is used as documented (its variants there are
        *native*); None means every context.
      summary: one line for listings.
    """

    name: str
    native_contexts: frozenset[str] | None
    summary: str

    @abc.abstractmethod
    def build(self, probe: Probe) -> BuiltOp:
        """Return `op(*inputs, *variables)` for `probe.spec`, whose gradient calls `probe.call_gradient`.

        `variables` are the tf.Variables made from `spec.variables`; the op reads them as the pattern does.
        """

    def is_native(self, context: str) -> bool:
        return self.native_contexts is None or context in self.native_contexts

    def __repr__(self) -> str:
        return f"<mechanism {self.name}>"
