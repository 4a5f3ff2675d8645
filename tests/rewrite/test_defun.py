"""Defun rewrites: run in TF2, they compute what the Defun computes in a v1 Session, or are left with a TODO.

Each legacy module runs in a tf.compat.v1 Graph + Session, its rewrite in TF2 (a Graph + Session, an eager
tape, a tape in a tf.function), with the same inputs: forward values and input gradients must agree.
"""

from __future__ import annotations

import textwrap

import pytest

from compat.rewrite import rewrite_source

HEADER = """
    import tensorflow as tf
    from tensorflow.python.framework import function
    """


def _rewrite(source: str) -> str:
    result = rewrite_source(source)
    assert not result.todo, [s.reason for s in result.todo]
    assert rewrite_source(result.text).text == result.text, "a second run must change nothing"
    return result.text


def _assert_equivalent(runner, folder, name: str, source: str, entries: dict) -> None:
    pytest.importorskip("tensorflow")
    legacy, rewritten = runner.load_pair(folder, name, source, _rewrite(source))
    found = runner.differences(legacy, rewritten, entries)
    assert not found, "\n".join(found)


def _module(body: str) -> str:
    return textwrap.dedent(HEADER).lstrip() + textwrap.dedent(body)


# A grad_func whose name is one the rewrite generates inside the new function (`grad`, `y`, `dy`).
@pytest.mark.parametrize("grad_name", ["grad", "y", "dy"])
def test_a_grad_func_named_like_a_generated_local_is_still_called(runner, tmp_path, grad_name: str) -> None:
    source = _module(f"""
        @function.Defun(tf.float32, tf.float32)
        def {grad_name}(x, dy):
            return dy * 3.0 + x

        @function.Defun(tf.float32, grad_func={grad_name})
        def triple_grad(x):
            return x * 2.0
        """)
    _assert_equivalent(runner, tmp_path, f"grad_named_{grad_name}", source, {"triple_grad": [("float32", [4])]})


@pytest.mark.parametrize("returned", ["(x * 2.0,)", "x * 2.0,", "[x * 2.0]"])
def test_a_single_output_returned_in_a_tuple_or_list_is_unpacked_like_tf1(runner, tmp_path, returned: str) -> None:
    source = _module(f"""
        def _four(op, dy):
            return [dy * 4.0]

        @function.Defun(tf.float32, python_grad_func=_four)
        def doubled(x):
            return {returned}

        def model(x):
            return tf.identity(doubled(x))  # a tensor of shape [4] in TF1, [1, 4] if the tuple were kept
        """)
    _assert_equivalent(runner, tmp_path, "one_tuple", source, {"model": [("float32", [4])]})


def test_several_outputs_returned_in_a_list_come_back_as_a_tuple_like_tf1() -> None:
    text = _rewrite(_module("""
        def _pair(op, da, db):
            return [da + db]

        @function.Defun(tf.float32, python_grad_func=_pair)
        def pair(x):
            return [x * 2.0, x + 1.0]
        """))
    assert "y = (x * 2.0, x + 1.0)" in text


def test_a_starred_return_is_left_with_a_todo(runner) -> None:
    reasons = runner.todo_reasons(_module("""
        def _pair(op, da, db):
            return [da + db]

        @function.Defun(tf.float32, python_grad_func=_pair)
        def pair(x):
            return (*tf.split(x, 2),)
        """))
    assert any("not known statically" in r for r in reasons), reasons


DEFUN_USED = """
    def _four(op, dy):
        return [dy * 4.0]

    @function.Defun(tf.float32, python_grad_func=_four)
    def doubled(x):
        return x * 2.0

    def model(x):
        return {use}
    """


@pytest.mark.parametrize("use, why", [
    ('doubled(x, name="layer")', '`doubled` is called with `name="layer"`'),
    ("doubled(x, **options)", "`doubled` is called with `**options`"),
    ("tf.identity(doubled(x), name=doubled.name)", "`doubled.name` reads an attribute of the Defun"),
    ("tf.map_fn(doubled, x)", "`doubled` is used as a value in `return tf.map_fn(doubled, x)`"),
])
def test_a_defun_used_other_than_called_with_tensors_is_left_with_a_todo(runner, use: str, why: str) -> None:
    reasons = runner.todo_reasons(_module(DEFUN_USED.format(use=use)))
    assert any(r.startswith(why) and "by hand" in r for r in reasons), reasons


def test_a_defun_called_with_positional_tensors_is_rewritten(runner, tmp_path) -> None:
    source = _module(DEFUN_USED.format(use="doubled(*[x]) + doubled(x)"))
    _assert_equivalent(runner, tmp_path, "positional", source, {"model": [("float32", [4])]})
