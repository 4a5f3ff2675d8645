"""GradientSpec: one custom gradient, defined once, to run through every mechanism and context."""

from __future__ import annotations

import dataclasses
import inspect
import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from compat.errors import Error

if TYPE_CHECKING:  # TensorFlow is imported lazily; see compat/__init__.py.
    import tensorflow as tf

    # (inputs, outputs, upstreams) -> grads, or (inputs, outputs, upstreams, variables) -> (grads, variable_grads)
    GradientFn = Callable[..., "Sequence[tf.Tensor | tf.IndexedSlices | None] | tuple[Sequence[Any], Sequence[Any]]"]
else:
    GradientFn = Callable[..., Any]

_OP_TYPE = re.compile(r"^[A-Z][A-Za-z0-9_>]*$")


class SpecError(Error, ValueError):
    """A GradientSpec (or something built from it) is not usable; the message says how to fix it."""


@dataclasses.dataclass(frozen=True, eq=False)
class GradientSpec:
    """One custom gradient: the forward computation, its gradient, and example inputs.

    Example (a sign straight-through estimator scaled by 0.5):

        spec = compat.GradientSpec(
            name="scaled_ste",
            forward=lambda x: tf.sign(x),
            gradient=lambda inputs, outputs, upstreams: [0.5 * upstreams[0]],
            example_inputs=[np.array([1.0, -2.0, 3.0], np.float32)],
            op_type="Sign",
        )

    Attributes:
      name: identifies the spec in every report and error message.
      forward: `forward(*inputs) -> Tensor | tuple[Tensor, ...]`, TensorFlow ops on the input tensors.
      gradient: `gradient(inputs, outputs, upstreams) -> [grad or None per input]`. `upstreams` holds one
        entry per forward output exactly as the mechanism hands it over: a Tensor, a tf.IndexedSlices or None.
        A gradient with a `variables` parameter, `gradient(inputs, outputs, upstreams, variables)`, is called
        with the tf.Variables the forward created (`tf.Variable`, `tf.compat.v1.get_variable`, a layer's
        weights) and returns `(input_grads, variable_grads)`, as `tf.custom_gradient`'s `grad(..., variables=)`
        does; their gradients are reported after the inputs'. The forward then creates its variables once per
        graph or trace (a second call of the op reuses them, as a layer does; `get_variable` runs under
        `reuse=AUTO_REUSE`), in the inputs' dtype if it should follow the dtype axis.
      example_inputs: numpy arrays giving the values, shapes and dtypes of the inputs.
      variables: initial values of `tf.Variable`s the forward reads (the `variables=` path of
        `tf.custom_gradient`). `forward(*inputs, *variable_values)` gets their values after the inputs, and
        `gradient` returns one gradient per input, then one per variable.
      op_type: for the `override_map` mechanism, override this single op type created by `forward` (e.g.
        "Sign"), the way legacy code usually does, instead of wrapping the whole forward generically.
      description: one line shown in reports.
      source: the `--specs` reference it was loaded from (a catalogue name, `path.py:NAME`), set by
        `compat.load_specs`; the `multi_worker` context's worker processes load the spec again from it.
      model: how the model uses the op, when not once on the inputs: `model(op, *inputs) -> outputs`, where
        `op(*xs)` is the built op (the forward with its custom gradient, one tensor or a tuple as `forward`
        returns). E.g. composition `lambda op, x: op(op(x))`, or a custom gradient per iteration of
        `tf.while_loop` / `tf.scan` / an RNN cell. Scenarios apply to what `model` returns; every call of the
        gradient function is recorded. Default: `op(*inputs)`.
    """

    name: str
    forward: Callable[..., Any]
    gradient: GradientFn
    example_inputs: Sequence[np.ndarray]
    op_type: str | None = None
    description: str = ""
    variables: Sequence[np.ndarray] = ()
    source: str | None = None
    model: Callable[..., Any] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise SpecError(f"GradientSpec name must be a non-empty string, got {self.name!r}.")
        where = f"spec `{self.name}`"
        for field in ("forward", "gradient"):
            if not callable(getattr(self, field)):
                raise SpecError(
                    f"{where}: `{field}` must be callable, got {type(getattr(self, field)).__name__}. "
                    f"Pass a function, e.g. {field}=lambda x: tf.sign(x)."
                )
        if isinstance(self.example_inputs, np.ndarray) or not isinstance(self.example_inputs, Sequence):
            raise SpecError(
                f"{where}: `example_inputs` must be a list of numpy arrays, one per input; "
                f"got {type(self.example_inputs).__name__}. Wrap a single array as [array]."
            )
        if not self.example_inputs and not self.takes_variables:
            raise SpecError(f"{where}: `example_inputs` is empty; give one numpy array per forward input (a forward "
                            f"of variables only needs a gradient taking `variables`).")
        for index, value in enumerate(self.example_inputs):
            if not isinstance(value, np.ndarray):
                raise SpecError(
                    f"{where}: example_inputs[{index}] is a {type(value).__name__}, not a numpy array; "
                    f"wrap it with np.asarray(..., dtype=np.float32)."
                )
        if isinstance(self.variables, np.ndarray) or not isinstance(self.variables, Sequence):
            raise SpecError(f"{where}: `variables` must be a list of numpy arrays (initial values), one per "
                            f"tf.Variable the forward reads; got {type(self.variables).__name__}.")
        for index, value in enumerate(self.variables):
            if not isinstance(value, np.ndarray):
                raise SpecError(f"{where}: variables[{index}] is a {type(value).__name__}, not a numpy array; "
                                f"wrap it with np.asarray(..., dtype=np.float32).")
        if self.takes_variables and self.variables:
            raise SpecError(f"{where}: a gradient taking `variables` receives the tf.Variables the forward creates; "
                            f"create them in the forward (tf.Variable(initial_value)) instead of passing `variables=`.")
        if self.takes_variables and self.op_type is not None:
            raise SpecError(f"{where}: a gradient taking `variables` cannot override one op type: TF1's "
                            f"RegisterGradient has no `variables=`; leave op_type None to wrap the whole forward.")
        if self.model is not None and not callable(self.model):
            raise SpecError(f"{where}: `model` must be callable as model(op, *inputs) -> outputs, got "
                            f"{type(self.model).__name__}; e.g. model=lambda op, x: op(op(x)).")
        if self.op_type is not None and (not isinstance(self.op_type, str) or not _OP_TYPE.match(self.op_type)):
            raise SpecError(
                f"{where}: op_type {self.op_type!r} is not a TensorFlow op type name "
                f"(CamelCase, e.g. 'Sign', 'MatMul'); leave it None to wrap the whole forward."
            )
        object.__setattr__(self, "example_inputs", tuple(self.example_inputs))
        object.__setattr__(self, "variables", tuple(self.variables))

    @property
    def takes_variables(self) -> bool:
        """Whether `gradient` has a `variables` parameter: it gets the forward's tf.Variables, returns their grads."""
        try:
            parameters = inspect.signature(self.gradient).parameters
        except (TypeError, ValueError):  # a builtin or C callable: no such parameter to see
            return False
        found = parameters.get("variables")
        return found is not None and found.kind in (found.POSITIONAL_OR_KEYWORD, found.KEYWORD_ONLY)

    @property
    def num_inputs(self) -> int:
        return len(self.example_inputs)

    @property
    def sources(self) -> tuple[np.ndarray, ...]:
        """Everything gradients are taken with respect to: the inputs, then the variables' initial values."""
        return (*self.example_inputs, *self.variables)

    def with_inputs(self, example_inputs: Sequence[np.ndarray],
                    variables: Sequence[np.ndarray] | None = None) -> GradientSpec:
        """The same spec with other example inputs (and variable values): another dtype, shape or value."""
        return dataclasses.replace(self, example_inputs=tuple(example_inputs),
                                   variables=self.variables if variables is None else tuple(variables))

    def __repr__(self) -> str:
        shapes = ", ".join(f"{value.dtype}{list(value.shape)}" for value in self.example_inputs)
        op = f", op_type={self.op_type!r}" if self.op_type else ""
        variables = ", ".join(f"{value.dtype}{list(value.shape)}" for value in self.variables)
        variables = f", variables=[{variables}]" if self.variables else ""
        model = ", model=..." if self.model is not None else ""
        return f"GradientSpec(name={self.name!r}, inputs=[{shapes}]{variables}{op}{model})"
