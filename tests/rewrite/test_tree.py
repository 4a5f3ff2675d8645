"""A map in one module using a gradient another module of the tree registers: rewritten with it, or a TODO."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from compat.rewrite import rewrite_paths

REGISTERING = """
    \"\"\"Registers the quantizer's gradient.\"\"\"
    import tensorflow as tf

    SCALE = 1.0


    @tf.RegisterGradient("{name}")
    def _clipped_grad(op, grad):
        return grad * tf.cast(tf.abs(op.inputs[0]) < {bound}, grad.dtype)
    """
USING = """
    \"\"\"Quantizes with it.\"\"\"
    import tensorflow as tf

    import {registering}  # noqa: F401  (registers {name})


    def quantize(x):
        with tf.get_default_graph().gradient_override_map({{"Round": "{name}"}}):
            return tf.round(x * 2.0)
    """


def _tree(folder: Path, tag: str, bound: str = "2.0", using: str = USING) -> tuple[Path, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    name, registering = f"ClippedGrad_{tag}", f"clipped_ops_{tag}"
    paths = folder / f"{registering}.py", folder / f"model_{tag}.py"
    paths[0].write_text(textwrap.dedent(REGISTERING.format(name=name, bound=bound)).lstrip(), encoding="utf-8")
    paths[1].write_text(textwrap.dedent(using.format(name=name, registering=registering)).lstrip(), encoding="utf-8")
    return paths


def _results(folder: Path) -> dict[str, object]:
    return {Path(r.path).name: r for r in rewrite_paths([str(folder)])}


def test_a_map_using_a_gradient_registered_in_another_module_is_rewritten_and_runs_like_tf1(runner, tmp_path,
                                                                                           monkeypatch) -> None:
    pytest.importorskip("tensorflow")
    registering, using = _tree(tmp_path / "tree", "ok")
    results = _results(tmp_path / "tree")
    model = results[using.name]
    assert model.status == "rewritten" and [s.outcome for s in model.sites] == ["rewritten"], model.sites
    assert f"registered in {registering}: _clipped_grad" in model.sites[0].reason
    assert "gradient_override_map" not in model.rewritten and "RegisterGradient" not in model.rewritten
    assert results[registering.name].status in ("todo", "unchanged")  # its registration stays valid TF2
    again = tmp_path / "again"
    again.mkdir()
    (again / using.name).write_text(model.rewritten, encoding="utf-8")
    (again / registering.name).write_text(registering.read_text(encoding="utf-8"), encoding="utf-8")
    assert _results(again)[using.name].status == "unchanged", "a second run must change nothing"
    monkeypatch.syspath_prepend(str(tmp_path / "tree"))
    legacy = runner.load(using, legacy=True)
    rewritten_path = tmp_path / "rewritten" / using.name
    rewritten_path.parent.mkdir()
    rewritten_path.write_text(model.rewritten, encoding="utf-8")
    rewritten = runner.load(rewritten_path, legacy=False)
    assert not runner.differences(legacy, rewritten, {"quantize": [("float32", [6])]})
    _, gradients = runner.run_session(legacy, "quantize", runner.inputs_for([("float32", [6])], 0), "sum")
    assert gradients[0].any(), "TF1's gradient of Round alone is zero: the override must matter here"
    sys.modules.pop(registering.stem, None)


@pytest.mark.parametrize("case", ["reads_a_module_constant", "registered_twice", "registered_again_in_a_function",
                                  "other_tf_import", "name_taken"])
def test_a_gradient_from_another_module_that_may_not_be_the_same_function_here_is_a_todo(tmp_path,
                                                                                        case: str) -> None:
    folder = tmp_path / case
    bound = "SCALE" if case == "reads_a_module_constant" else "2.0"
    using = USING
    if case == "other_tf_import":
        using = using.replace("import tensorflow as tf\n", "import tensorflow.compat.v1 as tf\n")
    if case == "name_taken":
        using += "\n\n    def _clipped_grad():\n        return None\n"
    registering, used = _tree(folder, case, bound, using)
    if case == "registered_twice":
        (folder / "copy_ops.py").write_text(registering.read_text(encoding="utf-8"), encoding="utf-8")
    if case == "registered_again_in_a_function":
        (folder / "late_ops.py").write_text(textwrap.dedent("""
            import tensorflow as tf
            NAME = "ClippedGrad_registered_again_in_a_function"
            def register():
                tf.RegisterGradient(NAME)(lambda op, grad: grad)
            """), encoding="utf-8")
    model = _results(folder)[used.name]
    assert [s.outcome for s in model.sites] == ["todo"], model.sites
    assert "neither registered in this file" in model.sites[0].reason
