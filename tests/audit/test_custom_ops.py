"""compat/audit/custom_ops.py: which names a code base defines as op types, and the audit's GC003 notes for them."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

from compat.audit import audit_paths
from compat.audit.custom_ops import imported_op_library, loads_op_library, op_types_beside, registered_op_types

KERNEL = textwrap.dedent('''\
    #include "tensorflow/core/framework/op.h"
    REGISTER_OP("RoiPool")
        .Attr("T: {float, double}")
        .Input("bottom_data: T");
    REGISTER_OP( "Addons>Resampler" ).Input("data: T");
    // REGISTER_OP_NO_GRADIENT("NotThis"); REGISTER_OP(kName) is not a literal name
    ''')
GRAD = textwrap.dedent('''\
    from tensorflow.python.framework import ops
    import roi_pooling_op


    @ops.RegisterGradient("RoiPool")
    def _roi_pool_grad(op, grad, _):
        return [roi_pooling_op.roi_pool_grad(op.inputs[0], grad, op.get_attr("pooled_height")), None]
    ''')
LOADER = ('import tensorflow as tf\n\n_module = tf.load_op_library("roi_pooling.so")\n'
          'roi_pool_grad = _module.roi_pool_grad\n')


def test_register_op_names_are_found_in_the_trees_cpp_and_cuda_sources(tmp_path: Path) -> None:
    (tmp_path / "lib" / "src").mkdir(parents=True)
    (tmp_path / "lib" / "src" / "roi_pooling_op.cu.cc").write_text(KERNEL)
    (tmp_path / "lib" / "notes.txt").write_text('REGISTER_OP("InText")')
    (tmp_path / "build").mkdir()  # default-excluded, as the audit's walk
    (tmp_path / "build" / "gen.cc").write_text('REGISTER_OP("Generated")')
    found = registered_op_types([str(tmp_path)])
    assert set(found) == {"RoiPool", "Addons>Resampler"}
    assert found["RoiPool"].endswith("lib/src/roi_pooling_op.cu.cc")
    assert set(registered_op_types([str(tmp_path)], default_excludes=False)) == {
        "RoiPool", "Addons>Resampler", "Generated"}
    assert registered_op_types([str(tmp_path / "lib" / "src" / "roi_pooling_op.cu.cc")]) == {}  # a file: not walked


def test_special_and_unreadable_sources_are_passed_over_without_blocking(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "fifo.cc")  # opening it for reading would wait for a writer
    (tmp_path / "loop").symlink_to(tmp_path)
    (tmp_path / "secret.cc").write_text('REGISTER_OP("Secret")')
    (tmp_path / "secret.cc").chmod(0)
    (tmp_path / "ok.cc").write_text('REGISTER_OP("Ok")')
    readable = os.access(tmp_path / "secret.cc", os.R_OK)  # root reads everything
    assert set(registered_op_types([str(tmp_path)])) == {"Ok"} | ({"Secret"} if readable else set())
    assert set(op_types_beside(str(tmp_path / "grad.py"))) == {"Ok"} | ({"Secret"} if readable else set())


def test_op_types_beside_a_file_are_those_of_its_own_directory_only(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "k.cc").write_text(KERNEL)
    assert op_types_beside(str(tmp_path / "grad.py")) == {}
    assert set(op_types_beside(str(tmp_path / "sub" / "grad.py"))) == {"RoiPool", "Addons>Resampler"}


def test_an_imported_module_beside_the_file_that_loads_an_op_library_is_named(tmp_path: Path) -> None:
    import ast

    grad = tmp_path / "roi_pooling_op_grad.py"
    grad.write_text(GRAD)
    assert imported_op_library(str(grad), ast.parse(GRAD)) is None
    (tmp_path / "roi_pooling_op.py").write_text(LOADER)
    assert loads_op_library(str(tmp_path / "roi_pooling_op.py"))
    assert imported_op_library(str(grad), ast.parse(GRAD)) == "roi_pooling_op"
    (tmp_path / "roi_pooling_op.py").write_text("def (:\n  load_op_library(")  # unparsable: no evidence
    assert imported_op_library(str(grad), ast.parse(GRAD)) is None


@pytest.mark.parametrize("evidence", ["kernel", "loader", "none"])
def test_the_audit_notes_a_custom_ops_gradient_as_the_rewriter_keeps_it(tmp_path: Path, evidence: str) -> None:
    from compat.rewrite import rewrite_paths

    (tmp_path / "roi_pooling_op_grad.py").write_text(GRAD)
    if evidence == "kernel":
        (tmp_path / "roi_pooling_op.cc").write_text(KERNEL)
    elif evidence == "loader":
        (tmp_path / "roi_pooling_op.py").write_text(LOADER)
    [finding] = [f for f in audit_paths([str(tmp_path)], jobs=1).findings if f.rule == "GC003"]
    [site] = [s for r in rewrite_paths([str(tmp_path)]) for s in r.sites]
    assert (finding.severity == "note") == (evidence != "none") == (site.outcome == "kept")
    if evidence == "kernel":
        assert "REGISTER_OP('RoiPool') in " in finding.message and "roi_pooling_op.cc" in finding.message
    if evidence == "loader":
        assert "`roi_pooling_op`, which this file imports" in finding.message


def test_auditing_one_file_sees_the_cpp_sources_of_its_directory(tmp_path: Path) -> None:
    (tmp_path / "roi_pooling_op_grad.py").write_text(GRAD)
    (tmp_path / "roi_pooling_op.cc").write_text(KERNEL)
    [finding] = [f for f in audit_paths([str(tmp_path / "roi_pooling_op_grad.py")], jobs=1).findings
                 if f.rule == "GC003"]
    assert finding.severity == "note" and "REGISTER_OP('RoiPool')" in finding.message


def test_gradcompats_own_map_is_no_finding_and_the_gradient_it_uses_is_a_note(tmp_path: Path) -> None:
    (tmp_path / "guided.py").write_text(textwrap.dedent('''\
        import contextlib

        import compat
        import tensorflow as tf


        @tf.RegisterGradient("GuidedReLU")
        def _guided(op, grad):
            return grad * tf.cast(grad > 0.0, grad.dtype)


        @contextlib.contextmanager
        def guided_relu():
            with compat.gradient_override_map({"Relu": "GuidedReLU"}):
                yield
        '''))
    findings = audit_paths([str(tmp_path)], jobs=1).findings
    assert not [f for f in findings if f.rule == "GC004"]
    [finding] = [f for f in findings if f.rule == "GC003"]
    assert finding.severity == "note" and "compat.gradient_override_map" in finding.message
