"""The probe records at the gradient function's entry, each time it runs, in eager and in graphs."""

import ast
from pathlib import Path

import numpy as np
import tensorflow as tf

import compat
from compat.mechanisms import MECHANISMS
from compat.probe import Probe
from compat.results import Upstream

X = np.array([1.0, -2.0, 3.0], np.float32)


def _spec(name="probe"):
    return compat.GradientSpec(name, lambda x: 3.0 * x, lambda i, o, u: [3.0 * u[0]], [X])


def test_each_eager_call_is_recorded_with_its_own_upstream():
    probe = Probe(_spec(), "custom_gradient@eager_tape")
    op = MECHANISMS["custom_gradient"].build(probe)
    x = tf.constant(X)
    with tf.GradientTape() as tape:
        tape.watch(x)
        loss = tf.reduce_sum(op(x)[0] * 2.0) + tf.reduce_sum(op(x)[0] * 5.0)
    tape.gradient(loss, x)
    assert probe.traces == 2 and len(probe.calls) == 2
    received = sorted(call[0].value[0] for call in probe.calls)
    assert received == [2.0, 5.0]


def test_graph_build_without_run_records_nothing_then_each_run_records():
    probe = Probe(_spec(), "override_map@v1_session")
    with tf.Graph().as_default():
        x = tf.compat.v1.placeholder(tf.float32, [3])
        (grad,) = tf.compat.v1.gradients(tf.reduce_sum(MECHANISMS["override_map"].build(probe)(x)[0]), [x])
        assert probe.traces == 1 and probe.calls == []
        with tf.compat.v1.Session() as session:
            session.run(grad, {x: X})
            session.run(grad, {x: X})
    assert len(probe.calls) == 2
    probe.reset_calls()
    assert probe.calls == [] and probe.traces == 1


def test_capture_inside_a_defun_body_survives_garbage_collection():
    import gc

    probe = Probe(_spec(), "defun_grad_func@v1_session")
    with tf.Graph().as_default():
        x = tf.compat.v1.placeholder(tf.float32, [3])
        (grad,) = tf.compat.v1.gradients(tf.reduce_sum(MECHANISMS["defun_grad_func"].build(probe)(x)[0]), [x])
        gc.collect()
        with tf.compat.v1.Session() as session:
            value = session.run(grad, {x: X})
    np.testing.assert_array_equal(value, [3.0, 3.0, 3.0])
    np.testing.assert_array_equal(probe.calls[0][0].value, [1.0, 1.0, 1.0])


def test_first_user_error_wins_and_names_spec_and_variant():
    probe = Probe(_spec("named"), "custom_gradient@v1_tape")
    first = probe.fail("first problem")
    probe.fail("second problem")
    assert probe.error is first
    assert str(first) == "spec `named`, variant `custom_gradient@v1_tape`: first problem"


def _probe_private_names() -> set[str]:
    probe = Probe(_spec(), "custom_gradient@eager_tape")
    names = {*vars(probe), *vars(Probe)}
    return {name for name in names if name.startswith("_") and not name.startswith("__")}


def _writes_outside_the_probe(tree: ast.AST, private: set[str]) -> list[str]:
    """`x._private` for a probe's private name, or `x.calls.append(...)`-style writes to its records, x not self."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute) or (isinstance(node.value, ast.Name) and node.value.id == "self"):
            continue
        if node.attr in private:
            found.append(f"line {node.lineno}: .{node.attr}")
        elif (node.attr in ("append", "extend", "clear", "insert") and isinstance(node.value, ast.Attribute)
              and node.value.attr in ("calls", "call_replicas", "violations")):
            found.append(f"line {node.lineno}: .{node.value.attr}.{node.attr}")
    return found


def test_no_module_outside_the_probe_touches_its_internals_or_writes_its_records():
    root = Path(compat.__file__).parent
    private = _probe_private_names()
    assert {"_lock", "_recorders"} <= private  # the scan below looks for real names
    offenders = {}
    for path in [*root.rglob("*.py"), *(root.parent / "benchmarks").rglob("*.py")]:
        if path == root / "probe.py":
            continue
        found = _writes_outside_the_probe(ast.parse(path.read_text()), private)
        if found:
            offenders[str(path.relative_to(root.parent))] = found
    assert offenders == {}, f"use Probe.record_call / Probe.note_violation instead: {offenders}"


def test_record_call_appends_the_call_and_its_replica_and_counts():
    probe = Probe(_spec(), "custom_gradient@eager_tape")
    call = (Upstream("none"),)
    assert probe.record_call(call) == 1 and probe.record_call(call, replica=1) == 2
    assert probe.calls == [call, call] and probe.call_replicas == [None, 1]
    probe.note_violation("wrong dtype")
    probe.note_violation("wrong dtype")
    assert probe.violations == ["wrong dtype"]


def test_calls_are_ordered_by_replica_keeping_each_replicas_own_order():
    """Replicas run concurrently: the cell's upstreams must not depend on which one's call arrived first."""
    probe = Probe(_spec(), "custom_gradient@mirrored_tape")
    first, second, third = (Upstream("none"),), (Upstream("dense", "float32"),), (Upstream("dense", "float64"),)
    for call, replica in ((first, 1), (second, 0), (third, 1), (first, 0)):
        probe.record_call(call, replica=replica)
    probe.order_calls_by_replica()
    assert probe.call_replicas == [0, 0, 1, 1] and probe.calls == [second, first, first, third]


def test_calls_of_unknown_replicas_are_ordered_by_what_they_received():
    """A Defun body under a v1 MirroredStrategy does not see its replica: arrival order must not decide."""
    import numpy as np

    low, high = ((Upstream("dense", "float32", value=np.array([v], np.float32)),) for v in (1.0, 2.0))
    orders = []
    for arrival in ((high, low), (low, high)):
        probe = Probe(_spec(), "defun_grad_func@mirrored_v1")
        for call in arrival:
            probe.record_call(call)
        probe.order_calls_by_replica()
        orders.append([call[0].value.tolist() for call in probe.calls])
    assert orders[0] == orders[1] and sorted(orders[0]) == [[1.0], [2.0]]


def _scale_by_variable(x):
    return x * tf.compat.v1.get_variable("scale", initializer=2.0)


def _variables_grad(inputs, outputs, upstreams, variables):
    return [upstreams[0] * 2.0], [tf.reduce_sum(upstreams[0] * inputs[0])]


def test_a_specs_variable_scope_is_numbered_by_its_own_builds_only():
    """So a spec's variable names (which messages may quote) are the same in a worker process as in one process."""

    def variable_names(spec_name):
        probe = Probe(compat.GradientSpec(spec_name, _scale_by_variable, _variables_grad, [X]), "v")
        with tf.Graph().as_default():
            probe.start_build()
            probe.forward(tf.constant(X))
        return [variable.name for variable in probe.created_variables]

    first = variable_names("scoped alone")
    variable_names("another scoped spec")
    second = variable_names("scoped alone")
    assert first[0].startswith("scoped_alone_") and first[0].endswith("/scale:0")
    assert int(second[0].split("/")[0].rsplit("_", 1)[1]) == int(first[0].split("/")[0].rsplit("_", 1)[1]) + 1
