"""compat/rewrite/kept.py: a RegisterGradient of a real op type that no override map uses is kept, as it is."""

from __future__ import annotations

import textwrap
from pathlib import Path

from compat.rewrite import rewrite_paths, rewrite_source
from compat.rewrite.todo import PREFIX

# TensorFlow's DeepCopy op has no gradient of its own (compat/data); the module gives it one.
TF_OP = textwrap.dedent('''\
    import tensorflow as tf


    @tf.RegisterGradient("DeepCopy")
    def _deep_copy_grad(op, grad):
        return 3.0 * grad * op.inputs[0]


    def copy_times(x):
        return tf.raw_ops.DeepCopy(x=x) * x
    ''')

OP_LIBRARY = textwrap.dedent('''\
    import tensorflow as tf
    from tensorflow.python.framework import ops

    _zero_out = tf.load_op_library("zero_out.so")


    @ops.RegisterGradient("ZeroOut")
    def _zero_out_grad(op, grad):
        return [grad * op.get_attr("scale")]
    ''')


def test_a_tensorflow_ops_gradient_is_kept_unchanged_and_runs_the_same_in_tf2(tmp_path: Path) -> None:
    from compat.verify import verify_rewrite

    result = rewrite_source(TF_OP)
    assert result.text == TF_OP
    [site] = result.sites
    assert (site.pattern, site.outcome) == ("register_gradient", "kept")
    assert "'DeepCopy'" in site.reason and "a TensorFlow op" in site.reason and "valid TF2" in site.reason
    legacy = tmp_path / "deep_copy.py"
    legacy.write_text(TF_OP, encoding="utf-8")
    report = verify_rewrite(str(legacy), result.text, {"copy_times": [("float32", [2, 3])]},
                            contexts=("eager_tape", "function_tape"))
    assert report.ok, report.render_text()


def test_a_custom_op_its_file_loads_is_kept_whatever_its_gradient_reads() -> None:
    result = rewrite_source(OP_LIBRARY)
    assert result.text == OP_LIBRARY and PREFIX not in result.text
    [site] = result.sites
    assert site.outcome == "kept"
    assert "tf.load_op_library" in site.reason and "this file" in site.reason


def test_a_gradient_name_that_is_no_op_type_is_still_a_todo() -> None:
    source = OP_LIBRARY.replace('_zero_out = tf.load_op_library("zero_out.so")\n', "")
    [site] = rewrite_source(source).sites
    assert site.outcome == "todo"


def test_a_registration_a_map_in_another_file_uses_is_not_kept(tmp_path: Path) -> None:
    (tmp_path / "ops.py").write_text(OP_LIBRARY, encoding="utf-8")
    (tmp_path / "model.py").write_text(textwrap.dedent('''\
        import tensorflow as tf


        def model(x):
            with tf.get_default_graph().gradient_override_map({"Identity": "ZeroOut"}):
                return tf.identity(x)
        '''), encoding="utf-8")
    together = {Path(r.path).name: r for r in rewrite_paths([str(tmp_path)])}
    assert [s.outcome for s in together["ops.py"].sites] == ["todo"]
    [alone] = rewrite_paths([str(tmp_path / "ops.py")])
    assert [s.outcome for s in alone.sites] == ["kept"] and alone.status == "unchanged"


def test_a_custom_op_a_module_beside_it_loads_is_kept(tmp_path: Path) -> None:
    grad = tmp_path / "roi_pool_op_grad.py"
    grad.write_text(textwrap.dedent('''\
        from tensorflow.python.framework import ops
        import roi_pool_op


        @ops.RegisterGradient("RoiPool")
        def _roi_pool_grad(op, grad, _):
            return [roi_pool_op.roi_pool_grad(op.inputs[0], grad, op.get_attr("pooled_height")), None]
        '''), encoding="utf-8")
    [alone] = rewrite_paths([str(grad)])
    assert [s.outcome for s in alone.sites] == ["todo"]  # nothing says RoiPool is an op type
    (tmp_path / "roi_pool_op.py").write_text('import tensorflow as tf\n\n_module = tf.load_op_library("roi.so")\n'
                                             "roi_pool_grad = _module.roi_pool_grad\n", encoding="utf-8")
    [found] = rewrite_paths([str(grad)])
    [site] = found.sites
    assert site.outcome == "kept" and found.status == "unchanged"
    assert "`roi_pool_op`, which this file imports, loads with tf.load_op_library" in site.reason


ICP_GRAD = textwrap.dedent('''\
    from tensorflow.python.framework import ops


    @ops.RegisterGradient("Icp")
    def _icp_grad(op, grad_transform, grad_residual):
        return [None, grad_transform * op.get_attr("scale"), None]
    ''')
ICP_KERNEL = 'REGISTER_OP("Icp")\n    .Attr("T: realnumbertype")\n    .Input("p: T");\n'


def test_a_custom_op_a_cc_file_beside_it_registers_is_kept(tmp_path: Path) -> None:
    grad = tmp_path / "ops" / "icp_grad.py"
    grad.parent.mkdir()
    grad.write_text(ICP_GRAD, encoding="utf-8")
    [alone] = rewrite_paths([str(grad)])
    assert [s.outcome for s in alone.sites] == ["todo"]  # imported by a loader elsewhere: nothing here says so
    (grad.parent / "icp_op_kernel.cc").write_text(ICP_KERNEL, encoding="utf-8")
    for paths in ([str(grad)], [str(tmp_path)]):  # the file alone (its directory's C++), or the whole tree
        [found] = rewrite_paths(paths)
        [site] = found.sites
        assert site.outcome == "kept" and found.status == "unchanged" and found.rewritten == ICP_GRAD
        assert "REGISTER_OP('Icp') in " in site.reason and "icp_op_kernel.cc" in site.reason


def test_a_custom_op_registered_in_another_directory_of_the_tree_is_kept_when_the_tree_is_rewritten(
        tmp_path: Path) -> None:
    grad = tmp_path / "python" / "icp_grad.py"
    grad.parent.mkdir()
    grad.write_text(ICP_GRAD, encoding="utf-8")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "icp.cu.cc").write_text(ICP_KERNEL, encoding="utf-8")
    [alone] = rewrite_paths([str(grad)])
    assert [s.outcome for s in alone.sites] == ["todo"]
    [together] = rewrite_paths([str(tmp_path)])
    assert [s.outcome for s in together.sites] == ["kept"]
    assert "src/icp.cu.cc" in together.sites[0].reason


def test_a_registered_op_that_a_map_uses_is_not_kept_however_the_op_is_defined(tmp_path: Path) -> None:
    (tmp_path / "icp_grad.py").write_text(ICP_GRAD, encoding="utf-8")
    (tmp_path / "icp_op_kernel.cc").write_text(ICP_KERNEL, encoding="utf-8")
    (tmp_path / "model.py").write_text(textwrap.dedent('''\
        import tensorflow as tf


        def model(x):
            with tf.get_default_graph().gradient_override_map({"Identity": "Icp"}):
                return tf.identity(x)
        '''), encoding="utf-8")
    together = {Path(r.path).name: r for r in rewrite_paths([str(tmp_path)])}
    assert [s.outcome for s in together["icp_grad.py"].sites] == ["todo"]
