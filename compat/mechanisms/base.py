"""What every mechanism provides: build a spec's op, the way a user of that pattern writes it."""

from __future__ import annotations

import abc
import weakref
from collections.abc import Callable
from typing import Any

import tensorflow as tf
from tensorflow.python.framework import function

from compat.application import BuiltOp, as_outputs
from compat.composite import assembled, component
from compat.naming import ascii_word, next_number
from compat.probe import Probe, UserCodeError
from compat.signature import forward_signature


def unique_name(prefix: str) -> str:
    """A name valid as a TensorFlow op/function/gradient name, unique in this process: `gc_<prefix>_<n>`.

    TensorFlow's gradient registry is global: registering a name twice raises `KeyError: Registering two
    gradient with name ...`, so every build (a notebook re-run included) gets a fresh name. `n` counts the
    names made with this prefix only (`compat.naming.next_number`), so a spec's names do not depend on which other
    specs this process built before it.
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
