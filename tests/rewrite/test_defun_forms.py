"""The Defun forms real TF1 code uses, each run as the original in a v1 Session and as its TF2 rewrite.

Forms: a Defun applied as a call (`f = Defun(...)(_f)`), several dtypes given by one starred argument
(`Defun(*[tf.float32] * n)`), func_name= / noinline= / out_names=, and shape_func= (kept as tf.ensure_shape where
TF2's tracing does not already know the shape). Forward values, input gradients, second-order gradients and the
outputs' static shapes must agree; what cannot be rewritten keeps a TODO that says why.
"""

from __future__ import annotations

import textwrap
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from compat.rewrite import rewrite_source

HEADER = """
    import tensorflow as tf
    from tensorflow.python.framework import function
    """


def _module(body: str) -> str:
    return textwrap.dedent(HEADER).lstrip() + textwrap.dedent(body)


def _rewrite(source: str) -> str:
    result = rewrite_source(source)
    assert not result.todo, [s.reason for s in result.todo]
    assert [s.outcome for s in result.sites] and all(s.outcome == "rewritten" for s in result.sites)
    assert "Defun" not in result.text, result.text
    assert rewrite_source(result.text).text == result.text, "a second run must change nothing"
    return result.text


def _loss(tf: Any, outputs: Any) -> Any:
    outputs = list(outputs) if isinstance(outputs, list | tuple) else [outputs]
    return tf.add_n([tf.reduce_sum(o * tf.cos(tf.cast(tf.range(tf.size(o)), o.dtype) * 1.7 + k))
                     for k, o in enumerate(outputs)])


def _squares(tf: Any, grads: list) -> Any:
    """A loss on the input gradients that is not linear in them, so its gradient needs the second order."""
    return tf.add_n([tf.reduce_sum(g * g * g) for g in grads if g is not None])


def _v1_second_order(module: ModuleType, entry: str, values: list[np.ndarray]) -> tuple[list, list | None]:
    """Output static shapes and second-order input gradients of `entry` in a tf.compat.v1 Graph + Session.

    None for the gradients where TF1 has no second order (through a grad_func Defun).
    """
    import tensorflow as tf

    v1 = tf.compat.v1
    with tf.Graph().as_default():
        xs = [v1.placeholder(v.dtype, v.shape) for v in values]
        outputs = getattr(module, entry)(*xs)
        shapes = [o.shape for o in (outputs if isinstance(outputs, list | tuple) else [outputs])]
        try:
            second = v1.gradients(_squares(tf, v1.gradients(_loss(tf, outputs), xs)), xs)
        except LookupError:  # a grad_func Defun's call (SymbolicGradient) has no gradient in TF1
            return shapes, None
        with v1.Session() as session:
            return shapes, [None if g is None else session.run(g, dict(zip(xs, values, strict=True)))
                            for g in second]


def _tf2_second_order(module: ModuleType, entry: str, values: list[np.ndarray]) -> tuple[list, list]:
    """The same for the rewrite in TF2, under nested GradientTapes in a tf.function (static shapes as traced)."""
    import tensorflow as tf

    shapes: list = []

    @tf.function
    def step(*xs: Any) -> list:
        with tf.GradientTape() as outer:
            outer.watch(xs)
            with tf.GradientTape() as inner:
                inner.watch(xs)
                outputs = getattr(module, entry)(*xs)
                loss = _loss(tf, outputs)
            first = inner.gradient(loss, list(xs))
            shapes.extend(o.shape for o in (outputs if isinstance(outputs, list | tuple) else [outputs]))
            square = _squares(tf, first)
        return outer.gradient(square, list(xs))

    second = step(*[tf.constant(v) for v in values])
    return shapes, [None if g is None else g.numpy() for g in second]


def _as_known(want: Any, got: Any) -> bool:
    """`got` (TF2 traced) is compatible with `want` (TF1) and knows every dimension `want` knows.

    Without shape_func a Defun's outputs have no static shape in TF1; TF2 traces the forward and knows more.
    """
    if want.rank is None:
        return True
    return got.rank == want.rank and all(w is None or w == g for w, g in zip(want.as_list(), got.as_list(),
                                                                           strict=True))


def _assert_equivalent(runner: ModuleType, folder: Any, name: str, source: str,
                       entries: dict[str, list[tuple[str, list[int]]]]) -> None:
    """Forward values and gradients (runner.differences), second-order gradients and static shapes agree."""
    pytest.importorskip("tensorflow")
    legacy, rewritten = runner.load_pair(folder, name, source, _rewrite(source))
    found = runner.differences(legacy, rewritten, entries)
    for entry, signature in entries.items():
        values = runner.inputs_for(signature, 3)
        want_shapes, want = _v1_second_order(legacy, entry, values)
        got_shapes, got = _tf2_second_order(rewritten, entry, values)
        if want is not None and not runner.same(want, got):
            found.append(f"{entry}: second-order gradients {want} in TF1, {got} rewritten")
        if len(want_shapes) != len(got_shapes) or not all(map(_as_known, want_shapes, got_shapes)):
            found.append(f"{entry}: output static shapes {want_shapes} in TF1, {got_shapes} rewritten")
    assert not found, "\n".join(found)


# --- A Defun applied as a call: `f = Defun(...)(_f)` ---------------------------------------------------------

APPLIED = {
    "grad_func": """
        @function.Defun(tf.float32, tf.float32, tf.float32)
        def _cube_grad(x, s, dy):
            return dy * 3.0 * x * x * s, dy * x * x * x

        def cube_fwd(x, s):
            return x * x * x * s

        cube = function.Defun(tf.float32, tf.float32, grad_func=_cube_grad)(cube_fwd)

        def model(x, s):
            return cube(x, s) + cube_fwd(x, s)  # `cube_fwd` itself stays a plain function
        """,
    "python_grad_func": """
        def _clipped(op, dy):
            x = op.inputs[0]
            return dy * tf.clip_by_value(x * x, -1.0, 1.0)

        def _sign(x):
            return tf.sign(x) * x * x

        sign = function.Defun(tf.float32, python_grad_func=_clipped, func_name="ClippedSign")(_sign)

        def model(x, s):
            return sign(x) * s
        """,
    "python_grad_func_lambda_reading_outputs": """
        def exp_fwd(x):
            return tf.exp(x * 0.5)

        exp = function.Defun(tf.float32, python_grad_func=lambda op, dy: dy * op.outputs[0] * 0.5)(exp_fwd)

        def model(x, s):
            return exp(x) * s
        """,
    "several_outputs_returned_in_a_list": """
        @function.Defun(tf.float32, tf.float32, tf.float32)
        def _pair_grad(x, da, db):
            return da * 2.0 * x + db

        def pair_fwd(x):
            return [x * x, x + 1.0]

        pair = function.Defun(tf.float32, grad_func=_pair_grad)(pair_fwd)

        def model(x, s):
            a, b = pair(x)
            return a * s + b
        """,
    "inside_a_function": """
        def model(x, s):
            def _bwd(op, dy):
                return dy * op.inputs[0] * 4.0

            def square_fwd(x):
                return x * x * 2.0

            square = function.Defun(tf.float32, python_grad_func=_bwd)(square_fwd)
            return square(x) * s
        """,
}


@pytest.mark.parametrize("name", sorted(APPLIED))
def test_a_defun_applied_as_a_call_computes_what_tf1_does(runner, tmp_path, name: str) -> None:
    _assert_equivalent(runner, tmp_path, f"applied_{name}", _module(APPLIED[name]),
                       {"model": [("float32", [5]), ("float32", [5])]})


def test_a_defun_applied_as_a_call_becomes_a_function_calling_the_wrapped_one() -> None:
    text = _rewrite(_module(APPLIED["grad_func"]))
    assert "@tf.custom_gradient\ndef cube(x, s):\n    y = cube_fwd(x, s)\n" in text, text
    assert "def cube_fwd(x, s):\n    return x * x * x * s\n" in text, "the wrapped function is left as it is"


@pytest.mark.parametrize("source, why", [
    ("""
        def with_gradient(op, grad_op, input_types):
            return function.Defun(*input_types, python_grad_func=grad_op)(op)
        """, "other than as a decorator or as `f = Defun(...)(function)`"),
    ("""
        def with_gradient(op, grad_op, input_types):
            wrapped = function.Defun(*input_types, python_grad_func=grad_op)(op)
            return wrapped
        """, "`wrapped = Defun(...)(op)` wraps something other than a plain function defined in this file"),
    ("""
        def _bwd(op, dy):
            return dy

        def _fwd(x):
            return x

        f = function.Defun(tf.float32, python_grad_func=_bwd)(_fwd)
        f = tf.identity
        """, "`f` is bound more than once"),
    ("""
        def _bwd(op, dy):
            return dy

        def f(x):
            return x

        f = function.Defun(tf.float32, python_grad_func=_bwd)(f)
        """, "`f = Defun(...)(f)` rebinds the function it wraps: rename the function (`def f_forward`"),
    ("""
        def _bwd(op, dy):
            return dy

        def _fwd(x):
            if x is None:
                return
            return x

        f = function.Defun(tf.float32, python_grad_func=_bwd)(_fwd)
        """, "does not return its outputs with `return <outputs>` everywhere"),
])
def test_a_defun_applied_to_what_the_rewriter_cannot_see_is_left_with_a_todo(runner, source: str,
                                                                           why: str) -> None:
    reasons = runner.todo_reasons(_module(source))
    assert any(why in r and "by hand" in r for r in reasons), reasons


# --- Several dtypes from one starred argument: `Defun(*[tf.float32] * n)` -------------------------------------

STARRED = """
    @function.Defun(*[tf.float32] * 3)
    def _fma_grad(a, b, dy):
        return dy * b * 2.0, dy * a

    @function.Defun(*([tf.float32] * 2), grad_func=_fma_grad)
    def fma(a, b):
        return a * b + a

    @function.Defun(*[tf.float32] * 2, python_grad_func=lambda op, dy: [dy * op.inputs[1], -dy])
    def product(a, b):
        return a * b

    def model(x, s):
        return fma(x, s) + product(s, x)
    """


def test_dtypes_given_by_a_starred_list_are_rewritten(runner, tmp_path) -> None:
    _assert_equivalent(runner, tmp_path, "starred", _module(STARRED), {"model": [("float32", [5]), ("float32", [5])]})


# A forward over `*args`: the custom-gradient wrapper of TF contrib's rev_block_lib and its copies (the Defun takes
# the inputs and the outputs, passes the outputs through, and its python_grad_func reads op.inputs as a whole).
VARARGS = """
    def with_custom_grad(fn, grad_fn, inputs):
        outputs = fn(*inputs)
        outputs = list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
        n_in = len(inputs)

        def custom_grad_fn(op, *dys):
            ins = list(op.inputs)[:n_in]
            return tuple(grad_fn(ins, list(dys)) + [None] * len(outputs))

        @function.Defun(*[t.dtype for t in list(inputs) + outputs], func_name="identity_custom_grad",
                        python_grad_func=custom_grad_fn, shape_func=lambda _: [t.get_shape() for t in outputs])
        def identity(*args):
            outs = args[n_in:]
            return tuple([tf.identity(t) for t in outs])

        return identity(*(list(inputs) + outputs))

    def _grad_fn(ins, dys):
        x, s = ins
        extra = dys[1] * 0.5 if len(dys) > 1 else 0.0
        return [dys[0] * s * 2.0 + extra, dys[0] * x * x]

    def two_outputs(x, s):
        return with_custom_grad(lambda a, b: (a * b, tf.reshape(a + b, tf.shape(b))), _grad_fn, [x, s])

    def one_output(x, s):
        return with_custom_grad(lambda a, b: a * b * b, _grad_fn, [x, s])
    """


def test_a_varargs_forward_with_a_python_grad_func_is_rewritten(runner, tmp_path) -> None:
    _assert_equivalent(runner, tmp_path, "varargs", _module(VARARGS),
                       {name: [("float32", [5]), ("float32", [5])] for name in ("two_outputs", "one_output")})


def test_a_varargs_forward_gives_one_output_as_the_tensor_itself_like_tf1() -> None:
    text = _rewrite(_module(VARARGS))
    assert "        y = y[0] if len(y) == 1 else tuple(y)\n" in text, text
    assert "ins = list([*args])[:n_in]" in text, text


@pytest.mark.parametrize("defun, why", [
    ("""
        @function.Defun(*[t.dtype for t in inputs])
        def _grad(*args):
            return args[:1]

        @function.Defun(*[t.dtype for t in inputs], grad_func=_grad)
        def identity(*args):
            return tuple(args)
        """, "`identity` takes `*args`, rewritten only as a decorated Defun with a python_grad_func"),
    ("""
        @function.Defun(*[t.dtype for t in inputs], python_grad_func=lambda op, *dys: [dys[0] * op.inputs[0]])
        def identity(*args):
            return tuple(args)
        """, "reads `op.inputs[0]` of `identity`, which takes `*args`"),
    ("""
        @function.Defun(*[t.dtype for t in inputs], python_grad_func=lambda op, *dys: list(dys))
        def identity(*args):
            return args[0]
        """, "`identity` takes `*args` and returns `args[0]`, which may be one tensor or several"),
    ("""
        @function.Defun(*[t.dtype for t in inputs], python_grad_func=lambda op, *dys: list(dys),
                        shape_func=lambda op: [op.inputs[1].get_shape()])
        def identity(*args):
            return tuple(args)
        """, "reads `op.inputs[1]` of a Defun over `*args`"),
])
def test_a_varargs_forward_the_rewriter_cannot_follow_is_left_with_a_todo(runner, defun: str, why: str) -> None:
    source = "def wrap(inputs):\n" + textwrap.indent(textwrap.dedent(defun), "    ") + "    return identity(*inputs)\n"
    reasons = runner.todo_reasons(_module(source))
    assert any(why in r and "by hand" in r for r in reasons), reasons


# --- Keywords that change no value: func_name=, noinline=, out_names= ------------------------------------------

KEYWORDS = """
    def _straight(op, dy):
        return tf.clip_by_value(dy, -0.5, 0.5)

    @function.Defun(tf.float32, python_grad_func=_straight, func_name="PassthroughSign", noinline=True,
                    out_names=["sign"])
    def passthrough_sign(x):
        return tf.sign(x)

    @function.Defun(tf.float32, tf.float32)
    def _scale_grad(x, dy):
        return dy * 3.0 * x * x

    @function.Defun(tf.float32, grad_func=_scale_grad, noinline=False, func_name="Cube")
    def cube(x):
        return x * x * x

    def model(x, s):
        return passthrough_sign(x) * s + cube(x) * s
    """


def test_keywords_that_change_no_value_are_dropped(runner, tmp_path) -> None:
    _assert_equivalent(runner, tmp_path, "keywords", _module(KEYWORDS), {"model": [("float32", [5]), ("float32", [5])]})
    reasons = [s.reason for s in rewrite_source(_module(KEYWORDS)).sites]
    assert reasons[0].endswith("func_name=, noinline=, out_names= dropped (no effect on values)"), reasons


# --- shape_func= ------------------------------------------------------------------------------------------------

SHAPES = """
    @function.Defun(python_grad_func=lambda x, dy: tf.convert_to_tensor(dy),
                    shape_func=lambda op: [op.inputs[0].get_shape()])
    def convert_gradient_to_tensor(x):
        return x

    def _rows_grad(op, dy):
        return dy * 2.0

    @function.Defun(tf.float32, python_grad_func=_rows_grad, shape_func=lambda op: [op.inputs[0].get_shape()])
    def kept_rows(x):
        # The shape of a gather by tf.where's result is not known while tracing; shape_func gives it.
        return tf.gather(x, tf.where(x > -100.0)[:, 0]) * 3.0

    def _two_shapes(op):
        return [op.inputs[0].get_shape(), op.inputs[0].get_shape()]

    def _split_grad(op, da, db):
        return da + db

    @function.Defun(tf.float32, python_grad_func=_split_grad, shape_func=_two_shapes)
    def split(x):
        return tf.gather(x, tf.where(x > -100.0)[:, 0]), tf.identity(x)

    def scaled(logits):
        def custom_grad_fn(op, g):
            return [g * 0.5]

        @function.Defun(tf.float32, func_name="scaled", python_grad_func=custom_grad_fn,
                        shape_func=lambda _: [logits.get_shape()])
        def identity(l):
            return tf.gather(l, tf.where(l > -100.0)[:, 0])

        return identity(logits)
    """


def test_shape_func_static_shapes_are_kept(runner, tmp_path) -> None:
    # Each entry returns the Defun's outputs themselves, whose static shapes TF1 takes from shape_func.
    _assert_equivalent(runner, tmp_path, "shapes", _module(SHAPES),
                       {name: [("float32", [5])] for name in ("convert_gradient_to_tensor", "kept_rows", "split",
                                                             "scaled")})


def test_shape_func_becomes_ensure_shape_only_where_tracing_does_not_keep_the_shape() -> None:
    text = _rewrite(_module(SHAPES))
    assert "def convert_gradient_to_tensor(x):\n    y = x\n" in text, text
    assert "y = tf.ensure_shape(tf.gather(x, tf.where(x > -100.0)[:, 0]) * 3.0, x.get_shape())" in text, text
    assert "y = tf.ensure_shape(tf.gather(l, tf.where(l > -100.0)[:, 0]), logits.get_shape())" in text, text


@pytest.mark.parametrize("shape_func, why", [
    ("lambda op: [op.outputs[0].get_shape()]", "shape_func `lambda op: [op.outputs[0].get_shape()]`"),
    ("lambda op: [op.inputs[0].get_shape(), op.inputs[0].get_shape()]", "does not give one shape per output (1)"),
    ("_shapes", "neither a lambda nor a function of this file made of one `return`"),
])
def test_a_shape_func_the_rewriter_cannot_follow_is_left_with_a_todo(runner, shape_func: str, why: str) -> None:
    reasons = runner.todo_reasons(_module(f"""
        def _shapes(op):
            shape = op.inputs[0].get_shape()
            return [shape]

        @function.Defun(tf.float32, python_grad_func=lambda op, dy: dy, shape_func={shape_func})
        def f(x):
            return x * 2.0
        """))
    assert any(why in r and "by hand" in r for r in reasons), reasons


# --- What a grad_func is called with ------------------------------------------------------------------------------

GATHERED = """
    @function.Defun(tf.float32, tf.float32)
    def _square_grad(x, dy):
        return dy * 3.0 * x

    @function.Defun(tf.float32, grad_func=_square_grad)
    def square(x):
        return x * x

    @function.Defun(tf.float32, tf.float32, tf.float32)
    def _pair_grad(x, da, db):
        return da * 2.0 * x + db * 0.5

    def pair_fwd(x):
        return x * x, x + 1.0

    pair = function.Defun(tf.float32, grad_func=_pair_grad)(pair_fwd)

    def model(x, s):
        a, b = pair(x)
        # tf.gather gives an IndexedSlices gradient, which TF1 makes dense for the grad_func.
        return tf.gather(square(x), [0, 2]) * s[:2] + tf.gather(a, [4, 1]) + tf.gather(b, [0, 0])
    """


def test_a_grad_func_gets_dense_gradients_like_tf1(runner, tmp_path) -> None:
    _assert_equivalent(runner, tmp_path, "gathered", _module(GATHERED),
                       {"model": [("float32", [5]), ("float32", [5])]})


# --- A forward returning a sequence that is not a literal ---------------------------------------------------------

SEQUENCES = """
    @function.Defun(tf.float32, python_grad_func=lambda op, dy: dy * 2.0,
                    shape_func=lambda op: [op.inputs[0].get_shape()])
    def one_in_a_list(x):
        return [tf.gather(x, tf.where(x > -100.0)[:, 0]) * k for k in (3.0,)]

    @function.Defun(tf.float32, python_grad_func=lambda op, da, db: da * 2.0 + db)
    def two_in_a_list(x):
        return list([x * 3.0, x * x])

    def model(x, s):
        a, b = two_in_a_list(x)
        # TF1 gives one output as the tensor itself: a list here would broadcast to [1, 5].
        return one_in_a_list(x) * s + a * b
    """


def test_one_output_returned_in_a_sequence_is_the_tensor_itself_like_tf1(runner, tmp_path) -> None:
    _assert_equivalent(runner, tmp_path, "sequences", _module(SEQUENCES),
                       {name: [("float32", [5])] for name in ("one_in_a_list", "two_in_a_list")}
                       | {"model": [("float32", [5]), ("float32", [5])]})


@pytest.mark.parametrize("forward", [
    """
    @function.Defun(tf.float32, python_grad_func=lambda op, dy: dy, shape_func=lambda op: [op.inputs[0].get_shape()])
    def f(tf):
        return tf * 2.0
    """,
    """
    @function.Defun(tf.float32, tf.float32)
    def _g(x, dy):
        return dy

    @function.Defun(tf.float32, grad_func=_g)
    def f(x):
        tf = x * 2.0
        return tf
    """,
])
def test_a_forward_binding_the_tensorflow_alias_is_left_with_a_todo(runner, forward: str) -> None:
    # The rewrite reads tf.ensure_shape / tf.convert_to_tensor inside the forward, where `tf` is the forward's own.
    reasons = runner.todo_reasons(_module(forward))
    assert any(r.startswith("`f` binds `tf` itself") for r in reasons), reasons
