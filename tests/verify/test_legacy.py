"""User modules are imported as their program would: in their package, with TF1 names explained when missing."""

from __future__ import annotations

from compat.verify._legacy import missing_tensorflow_symbol, package_of


def test_a_module_in_a_package_is_found_with_its_dotted_name(tmp_path):
    (tmp_path / "pkg" / "sub").mkdir(parents=True)
    for init in (tmp_path / "pkg" / "__init__.py", tmp_path / "pkg" / "sub" / "__init__.py"):
        init.write_text("")
    assert package_of(str(tmp_path / "pkg" / "sub" / "ops.py")) == (str(tmp_path), "pkg.sub")
    assert package_of(str(tmp_path / "ops.py")) is None


def test_an_attribute_tensorflow_lacks_is_named_with_the_line(tmp_path):
    path = tmp_path / "ops.py"
    path.write_text("def f(tf):\n    return tf.contrib.layers\n")
    namespace: dict = {}
    exec(compile(path.read_text(), str(path), "exec"), namespace)

    class FakeV1:
        def __getattr__(self, name):
            raise AttributeError(f"module 'tensorflow.compat.v1' has no attribute '{name}'")

    try:
        namespace["f"](FakeV1())
    except AttributeError as exc:
        message = missing_tensorflow_symbol(exc, str(path))
    assert message is not None and message.startswith(f"{path}:2: `return tf.contrib.layers` needs `tf.contrib`")
    assert missing_tensorflow_symbol(ValueError("module 'tensorflow' has no attribute 'x'"), str(path)) is None
