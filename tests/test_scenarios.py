"""Scenarios set the upstream the gradient function receives; each declares when it does not apply."""

import numpy as np
import pytest

import compat
from compat.catalogue import CATALOGUE
from compat.scenarios import SCENARIOS, select_scenarios

REQUIRED = {"sum", "scaled", "weighted", "mean", "square", "broadcast", "reduce_axis", "gather", "gather_twice",
            "reuse", "unused_output", "stop_gradient", "grad_ys", "second_order", "dynamic_batch"}


def test_registry_has_every_required_scenario_with_a_description():
    assert REQUIRED <= set(SCENARIOS)
    assert all(scenario.description for scenario in SCENARIOS.values())
    assert [s.name for s in select_scenarios(["gather", "sum"])] == ["gather", "sum"]
    with pytest.raises(ValueError, match="unknown scenario.*'nope'.*choose from"):
        select_scenarios(["nope"])


@pytest.fixture(scope="module")
def identity_runs():
    """The identity op with custom_gradient passing the upstream through: input grad == upstream."""
    spec = compat.GradientSpec("identity", lambda x: x * 1.0, lambda i, o, u: [u[0]],
                               [np.arange(1.0, 13.0, dtype=np.float32).reshape(4, 3)])
    downstreams = [SCENARIOS[name].downstream(spec) for name in sorted(REQUIRED - {"unused_output"})]
    from compat.runner import run_matrix

    return {r.downstream: r for r in run_matrix(spec, downstreams, ["custom_gradient@v1_session"])}


def test_upstreams_follow_the_downstream(identity_runs):
    assert np.all(identity_runs["sum"].upstream[0].value == 1.0)
    assert np.all(identity_runs["scaled"].upstream[0].value == 3.0)
    np.testing.assert_allclose(identity_runs["mean"].upstream[0].value, np.full((4, 3), 1 / 12))
    x = np.arange(1.0, 13.0, dtype=np.float32).reshape(4, 3)
    np.testing.assert_allclose(identity_runs["square"].upstream[0].value, 2 * x)
    broadcast = identity_runs["broadcast"].upstream[0].value
    assert np.all(broadcast == broadcast[0]) and len(set(broadcast[0])) == 3
    weighted = identity_runs["weighted"].upstream[0].value
    assert len(np.unique(weighted)) == 12 and np.all(np.abs(weighted) >= 0.5)


def test_gather_hands_over_indexed_slices(identity_runs):
    upstream = identity_runs["gather"].upstream[0]
    assert upstream.kind == "indexed_slices"
    np.testing.assert_array_equal(upstream.indices, [0, 3, 0])
    dense = identity_runs["gather_twice"].upstream[0].to_dense()
    np.testing.assert_array_equal(dense[:, 0], [1.0, 0.0, 0.0, 6.0])


def test_stop_gradient_never_calls_and_grad_ys_is_handed_over(identity_runs):
    assert identity_runs["stop_gradient"].status == "not_called"
    assert identity_runs["stop_gradient"].input_grads == (None,)
    grad_ys = identity_runs["grad_ys"]
    np.testing.assert_array_equal(grad_ys.upstream[0].value, grad_ys.input_grads[0])
    assert identity_runs["dynamic_batch"].upstream[0].static_shape == (None, 3)
    assert identity_runs["second_order"].status == "ok"


def test_skip_reasons_are_given():
    single = CATALOGUE["sign_ste"]()
    assert "one output" in SCENARIOS["unused_output"].skip_reason(single)
    assert SCENARIOS["unused_output"].skip_reason(CATALOGUE["multi_output_int"]()) is None
    scalar = compat.GradientSpec("scalar", lambda x: x * 2.0, lambda i, o, u: [u[0]], [np.array(2.0, np.float32)])
    assert "rank 0" in SCENARIOS["gather"].skip_reason(scalar)
    int_first = compat.GradientSpec("int_first", lambda x: __import__("tensorflow").cast(x, "int32"),
                                    lambda i, o, u: [None], [np.ones(2, np.float32)])
    assert "int32" in SCENARIOS["sum"].skip_reason(int_first)


def test_all_outputs_hands_every_float_output_its_own_upstream():
    from compat.runner import run_matrix

    spec = CATALOGUE["multi_output_int"]()
    scenario = SCENARIOS["all_outputs"]
    assert scenario.skip_reason(CATALOGUE["scaled_ste"]()) == "the spec has one output; `sum` already uses it"
    (result,) = run_matrix(spec, [scenario.downstream(spec)], ["custom_gradient@eager_tape"])
    first, _, third = result.upstream
    assert np.all(first.value == 1.0) and np.all(third.value == 3.0)


def test_every_shardable_scenario_splits_into_parts_that_add_up_to_the_whole():
    import tensorflow as tf

    spec = compat.load_specs(["multi_output_int"])[0]
    outputs = spec.forward(tf.constant(spec.example_inputs[0]))
    for scenario in SCENARIOS.values():
        if scenario.skip_reason(spec):
            continue
        whole = scenario.downstream(spec)
        parts = [whole.shard(np.array(rows, np.int64)) for rows in ([0, 1], [2, 3])]
        shard_outputs = [[tf.gather(o, rows) for o in outputs] for rows in ([0, 1], [2, 3])]
        if whole.output_gradients is not None:  # grad_ys: the seeds split like the target
            total = sum(tf.reduce_sum(p.loss(*o) * p.output_gradients(p.loss(*o)))
                        for p, o in zip(parts, shard_outputs, strict=True))
            expected = tf.reduce_sum(whole.loss(*outputs) * whole.output_gradients(whole.loss(*outputs)))
        else:
            total = sum(tf.reduce_sum(p.loss(*o)) for p, o in zip(parts, shard_outputs, strict=True))
            expected = tf.reduce_sum(whole.loss(*outputs))
        np.testing.assert_allclose(float(total), float(expected), rtol=1e-5, err_msg=scenario.name)
