"""TensorFlow wrappers the rewriter understands: which op types a call creates, and which arguments are tensors.

Every entry was checked in a tf.compat.v1 graph (tests/rewrite/test_tf_ops.py): calling the wrapper on float
tensors of every floating dtype creates exactly the listed op types, or nothing where `no_op_when` says so (a
same-dtype `tf.cast`). A call the registry does not know is code the rewriter cannot see into, so an override
map around it is left for a human; so is one around a wrapper that may create no op.

Only floating tensors are checked: `tf.round` of an integer tensor returns it (no op) but integer tensors carry
no gradient either way; complex tensors are not covered (`tf.sign` of one creates Cast/ComplexAbs/DivNoNan, no
Sign op, so a Sign override would not apply in TF1).
"""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class OpWrapper:
    """A public function that creates ops; `inputs` names its tensor parameters in positional order."""

    path: str
    op_types: frozenset[str]
    inputs: tuple[str, ...] = ("x",)
    no_op_when: str = ""  # when a call creates no op at all (TensorFlow returns the input itself), if it can
    type_attrs: tuple[tuple[str, int], ...] = ()  # (attr, i): the op's type attribute is the dtype of input i

    @property
    def always_creates(self) -> bool:
        """Whether every call on floating tensors creates its op types: an override map always applies to it."""
        return not self.no_op_when

    @property
    def single_op(self) -> str | None:
        """The op type when the wrapper creates exactly one op (the only case a gradient override can wrap)."""
        return next(iter(self.op_types)) if len(self.op_types) == 1 else None


WRAPPERS: dict[str, OpWrapper] = {}

# Ops that Python operators, indexing and literal conversion may create inside an override block.
OPERATOR_OP_TYPES = frozenset({
    "Abs", "Add", "AddV2", "BatchMatMulV2", "BitwiseAnd", "BitwiseOr", "BitwiseXor", "Cast", "Const", "Div",
    "Equal", "FloorDiv", "FloorMod", "Greater", "GreaterEqual", "Identity", "Invert", "Less", "LessEqual",
    "LogicalAnd", "LogicalNot", "LogicalOr", "MatMul", "Mul", "Neg", "NotEqual", "Pack", "Pow", "RealDiv",
    "Reshape", "Shape", "StridedSlice", "Sub", "TrueDiv",
})

_MODULES = {"math": "python.ops.math_ops", "array": "python.ops.array_ops", "nn": "python.ops.nn_ops",
            "clip": "python.ops.clip_ops"}


def _register(op_types: str | tuple[str, ...], inputs: tuple[str, ...], *paths: str, internal: str = "math",
              no_op_when: str = "") -> None:
    types = frozenset((op_types,) if isinstance(op_types, str) else op_types)
    leaf = paths[0].rsplit(".", 1)[-1]
    # Every single-op wrapper's op types its inputs with the attribute T (checked against TensorFlow by a test).
    type_attrs = (("T", 0),) if isinstance(op_types, str) and not no_op_when else ()
    for path in (*paths, f"{_MODULES[internal]}.{leaf}"):
        WRAPPERS[path] = OpWrapper(path, types, inputs, no_op_when, type_attrs)


# Single-op wrappers: a call can be wrapped in a tf.custom_gradient.
_register("Sign", ("x",), "sign", "math.sign")
_register("Round", ("x",), "round", "math.round")
_register("Floor", ("x",), "floor", "math.floor")
_register("Ceil", ("x",), "math.ceil", "ceil")
_register("Identity", ("input",), "identity", internal="array")
_register("Neg", ("x",), "negative", "math.negative")
_register("Relu", ("features",), "nn.relu", internal="nn")
_register("Sigmoid", ("x",), "sigmoid", "math.sigmoid", "nn.sigmoid")
_register("Tanh", ("x",), "tanh", "math.tanh", "nn.tanh")
_register("Exp", ("x",), "exp", "math.exp")
_register("Square", ("x",), "square", "math.square")
_register("StopGradient", ("input",), "stop_gradient", internal="array")
_register("Mul", ("x", "y"), "multiply", "math.multiply")
_register("Maximum", ("x", "y"), "maximum", "math.maximum")
_register("AddV2", ("x", "y"), "add", "math.add")
_register("RealDiv", ("x", "y"), "div")  # tf.compat.v1.div (TF1's tf.div) of floating tensors
_register("Minimum", ("x", "y"), "minimum", "math.minimum")
# Several ops, or ops that depend on the argument: allowed in a block only when none of their types is overridden.
_register(("Abs", "ComplexAbs"), ("x",), "abs", "math.abs")
_register(("Const", "Max"), ("input_tensor",), "reduce_max", "math.reduce_max")
_register(("Const", "Size"), ("input",), "size", internal="array")  # Const when the static shape is known
_register(("Const", "Sum"), ("input_tensor",), "reduce_sum", "math.reduce_sum")
_register(("Const", "Mean"), ("input_tensor",), "reduce_mean", "math.reduce_mean")
_register(("Const", "Maximum", "Minimum"), ("t",), "clip_by_value", internal="clip")
# Ops created or not depending on the arguments: a map overriding them may not apply at all in TF1.
_register("Cast", ("x",), "cast", internal="math", no_op_when="it casts to the tensor's own dtype")


def lookup(public_path: str | None) -> OpWrapper | None:
    """The wrapper for `sign`, `math.sign` or `python.ops.math_ops.sign` (paths below `tensorflow`)."""
    return WRAPPERS.get(public_path or "")
