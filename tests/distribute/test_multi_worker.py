"""multi_worker: 2 local worker processes on loopback, one replica each (about 20 s: two TensorFlow imports)."""

import numpy as np

import compat


def test_two_workers_each_record_their_replica_and_reduce_to_the_whole_batch():
    specs = compat.load_specs(["scaled_ste"])
    report = compat.check(specs, scenarios=["weighted"], variants=["custom_gradient@multi_worker"])
    [cell] = report.cells
    assert cell.status in ("same", "differs"), cell.result.message
    assert not [d for d in cell.differences if d.breaking], cell.differences
    unscaled = sorted((r.replica, r.rows) for r in cell.result.replicas if r.scaling == "none")
    assert unscaled == [(0, (0, 1)), (1, (2, 3))]
    reference = compat.run(specs[0], compat.SCENARIOS["weighted"].downstream(specs[0]), [report.reference])[0]
    np.testing.assert_allclose(cell.result.input_grads[0], reference.input_grads[0], rtol=1e-6)


def test_a_spec_without_a_source_is_unsupported_saying_how_to_pass_it(seed_spec):
    [result] = compat.run(seed_spec(), variants=["custom_gradient@multi_worker"])
    assert result.status == "unsupported" and "path/to/file.py:NAME" in result.message
