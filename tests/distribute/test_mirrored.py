"""mirrored_tape and mirrored_v1 on 2 logical CPUs: per-replica records, shards, reduction, scaling."""

import json

import jsonschema
import numpy as np
import pytest

import compat
from compat.reports.json_report import SCHEMA_PATH

SPECS = ["scaled_ste", "clip_grad_by_norm"]
VARIANTS = ["custom_gradient@mirrored_tape", "override_map@mirrored_v1"]


@pytest.fixture(scope="module", name="report")
def report_fixture():
    return compat.check(compat.load_specs(SPECS), scenarios=["weighted", "gather"], variants=VARIANTS)


def _cell(report, spec, scenario, variant):
    return next(c for c in report.cells if (c.spec, c.scenario, c.variant) == (spec, scenario, variant))


def _reference(report, spec, scenario):
    return compat.run(compat.load_specs([spec])[0], compat.SCENARIOS[scenario].downstream(
        compat.load_specs([spec])[0]), variants=[report.reference])[0]


@pytest.mark.parametrize("variant", VARIANTS)
def test_each_replica_gets_its_rows_upstream_once_per_scaling(report, variant):
    cell = _cell(report, "scaled_ste", "weighted", variant)
    full = _reference(report, "scaled_ste", "weighted").upstream[0].value
    assert cell.result.calls == 2 and cell.result.global_batch == 4
    seen = {}
    for record in cell.result.replicas:
        assert len(record.upstreams) == 1, record
        factor = 0.25 if record.scaling == "global_batch" else 1.0
        np.testing.assert_allclose(record.upstreams[0][0].value, full[list(record.rows)] * factor, rtol=1e-6)
        seen.setdefault(record.scaling, []).extend(record.rows)
    assert {scaling: sorted(rows) for scaling, rows in seen.items()} == {"none": [0, 1, 2, 3],
                                                                          "global_batch": [0, 1, 2, 3]}
    assert {r.replica for r in cell.result.replicas} == {0, 1}
    assert not [d for d in cell.differences if d.breaking], cell.differences


def test_gather_hands_each_replica_slices_of_its_own_rows(report):
    cell = _cell(report, "scaled_ste", "gather", "custom_gradient@mirrored_tape")
    by_replica = {r.replica: r.upstreams[0][0] for r in cell.result.replicas if r.scaling == "none"}
    assert all(u.kind == "indexed_slices" for u in by_replica.values())
    assert by_replica[0].indices.tolist() == [0, 0] and by_replica[1].indices.tolist() == [1]  # rows 0, 0 and 3
    expected = np.zeros((4, 3), np.float32)
    expected[0], expected[3] = 1.0, 0.5  # 0.5 * upstream, row 0 gathered twice
    np.testing.assert_allclose(cell.result.input_grads[0], expected)


def test_clip_by_norm_reduced_gradient_differs_from_the_whole_batch(report):
    cell = _cell(report, "clip_grad_by_norm", "weighted", "custom_gradient@mirrored_tape")
    wheres = {d.where for d in cell.differences if d.kind == "values"}
    assert {"reduced input_grad[0]", "reduced 1/global_batch input_grad[0]"} <= wheres
    assert not any(w.startswith("replica[") for w in wheres)  # each replica agrees with its shard's own run
    assert not cell.native and not cell.unexpected


def test_json_report_has_valid_replica_entries(report):
    document = json.loads(compat.render(report, "json"))
    jsonschema.validate(document, json.loads(SCHEMA_PATH.read_text(encoding="utf-8")))
    cell = next(c for c in document["cells"] if c["context"] == "mirrored_tape")
    assert [(r["replica"], r["scaling"]) for r in cell["replicas"]] == [
        (0, "none"), (1, "none"), (0, "global_batch"), (1, "global_batch")]
    assert cell["global_batch"] == 4 and cell["scaled_input_grads"] is not None


def test_a_loss_that_cannot_be_split_is_unsupported_saying_why():
    spec = compat.load_specs(["scaled_ste"])[0]
    import tensorflow as tf

    [result] = compat.run(spec, lambda y: tf.reduce_max(y), variants=["custom_gradient@mirrored_tape"])
    assert result.status == "unsupported"
    assert "cannot be split by shard" in result.message


def test_worker_processes_split_their_cpu_too_so_jobs_2_runs_the_mirrored_cells_as_one_process_does(report):
    """Each worker of `--jobs=2` is a fresh process: it must make its 2 logical CPUs before loading, or every
    mirrored cell there is `unsupported` while one process runs them."""
    from compat.apps._request import CheckRequest
    from compat.workers import check_in_workers

    spread = check_in_workers(CheckRequest(specs=tuple(SPECS), scenarios=("weighted", "gather")), variants=VARIANTS,
                              jobs=2)
    statuses = {(c.spec, c.scenario, c.variant): c.status for c in spread.cells}
    assert "unsupported" not in set(statuses.values()), spread.cells[0].message
    assert statuses == {(c.spec, c.scenario, c.variant): c.status for c in report.cells}


@pytest.mark.parametrize("context", ["mirrored_tape", "mirrored_v1"])
def test_a_case_that_does_not_shard_is_refused_as_a_value_without_building_it(context):
    import tensorflow as tf

    from compat.contexts import ALL_CONTEXTS, Case, Refused
    from compat.downstream import Downstream

    def build():
        raise AssertionError("a case that does not shard is never built")

    case = Case(build, (np.ones((4, 2), np.float32),), Downstream("max", lambda y: tf.reduce_max(y)))
    (outcome,) = ALL_CONTEXTS[context].run([case])
    assert isinstance(outcome, Refused) and outcome.reason.startswith("not run: the downstream `max` cannot be split")
