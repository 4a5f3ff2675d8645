"""A rewrite keeps the file's line endings to the last one, CR-only files included (LibCST drops their final CR)."""

from __future__ import annotations

import pytest

from compat.rewrite import rewrite_file, rewrite_source

LEGACY = """import tensorflow as tf

@tf.RegisterGradient("Twice")
def _twice(op, grad):
    return grad * 2.0

def f(x):
    with tf.get_default_graph().gradient_override_map({"Sign": "Twice"}):
        return tf.sign(x)
"""


@pytest.mark.parametrize("newline", ["\r", "\n", "\r\n"])
@pytest.mark.parametrize("blank_lines", [0, 2])
def test_final_newlines_are_kept(newline: str, blank_lines: int) -> None:
    source = (LEGACY + "\n" * blank_lines).replace("\n", newline)
    result = rewrite_source(source).text
    assert "_sign_with_twice" in result
    assert result.endswith("return _sign_with_twice(x)" + newline * (1 + blank_lines))
    assert not set(result.replace(newline, "")) & {"\r", "\n"}, "every line keeps the file's line ending"
    assert rewrite_source(result).text == result, "a second run must change nothing"


def test_a_cr_only_file_written_in_place_ends_with_its_cr(tmp_path) -> None:
    path = tmp_path / "legacy.py"
    path.write_bytes(LEGACY.replace("\n", "\r").encode())
    assert rewrite_file(str(path), in_place=True).status == "rewritten"
    data = path.read_bytes()
    assert data.endswith(b"return _sign_with_twice(x)\r") and b"\n" not in data
