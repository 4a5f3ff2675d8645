"""compat.distribute extends compat.contexts one way, and comparing a distributed cell runs nothing: the
single-device references it needs are computed in the run stage and handed over as values."""

import dataclasses
import subprocess
import sys

import compat
from compat import checker
from compat.distribute import reference_runs
from compat.distribute.compare import References


def _fresh(code: str) -> str:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()


def test_the_distributed_comparison_imports_neither_the_runner_nor_tensorflow():
    code = "import sys, compat.distribute.compare; print('compat.runner' in sys.modules, 'tensorflow' in sys.modules)"
    assert _fresh(code) == "False False"


def test_the_context_registry_loads_the_distributed_contexts_only_when_named():
    code = ("import sys, compat.contexts as c; before = 'compat.distribute.mirrored' in sys.modules; "
            "print(before, type(c.ALL_CONTEXTS['mirrored_tape']).__module__)")
    assert _fresh(code) == "False compat.distribute.mirrored"


def _forbidden(*args, **kwargs):
    raise AssertionError("the comparison stage ran TensorFlow again (run_matrix)")


def test_comparing_a_distributed_unit_given_its_references_runs_nothing(monkeypatch):
    specs = compat.load_specs(["scaled_ste"])
    variants = ["custom_gradient@mirrored_tape", "override_map@mirrored_v1"]
    chosen = checker.plan(scenarios=["weighted"], variants=variants, references=[])
    ran = checker.run_unit(specs[0], chosen.scenarios, chosen.to_run, chosen.reference)
    assert ran.distributed is not None and ran.distributed.shards and ran.distributed.scaled
    for module in (checker, reference_runs, compat.runner):
        monkeypatch.setattr(module, "run_matrix", _forbidden)
    cells = checker.compare_unit(ran, "float32", chosen.variants, chosen.reference)
    monkeypatch.undo()
    expected = compat.check(specs, scenarios=["weighted"], variants=variants, references=[]).cells
    assert [(c.variant, c.status, c.differences) for c in cells] == [
        (c.variant, c.status, c.differences) for c in expected]
    without = checker.compare_unit(dataclasses.replace(ran, distributed=References({}, {})), "float32",
                                   chosen.variants, chosen.reference)
    per_replica = [d for c in cells for d in c.differences if d.where.startswith("replica[")]
    assert per_replica and not [d for c in without for d in c.differences if d.where.startswith("replica[")]


def test_a_run_unit_without_distributed_cells_carries_no_references():
    chosen = checker.plan(scenarios=["sum"], variants=["custom_gradient@eager_tape"], references=[])
    ran = checker.run_unit(compat.load_specs(["scaled_ste"])[0], chosen.scenarios, chosen.to_run, chosen.reference)
    assert ran.distributed is None and ran.baselines == {"sum": chosen.reference}
