"""One worker of the multi_worker context: `python -m compat.distribute._worker JOB OUT`, with TF_CONFIG set.

Runs every case of JOB under MultiWorkerMirroredStrategy (this process holds one replica) and pickles, per
case, this worker's records of both runs to OUT.
"""

from __future__ import annotations

import pickle
import sys
from typing import Any


def run_case(strategy: Any, spec_case: dict[str, Any]) -> dict[str, Any]:
    import tensorflow as tf

    from compat.contexts.base import Case, tape_gradients
    from compat.distribute.step import run_in_function
    from compat.loading import load_spec
    from compat.probe import Probe, UserCodeError
    from compat.runner import op_builder
    from compat.scenarios import SCENARIOS

    found = [s for s in load_spec(spec_case["source"]) if s.name == spec_case["spec"]]
    if not found:
        return {"error": ("LookupError", f"{spec_case['source']} defines no spec `{spec_case['spec']}` here", "build")}
    spec = found[0].with_inputs(spec_case["inputs"], spec_case["variables"])
    probe = Probe(spec, spec_case["variant"])
    downstream = SCENARIOS[spec_case["scenario"]].downstream(spec)
    case = Case(build=op_builder(probe), inputs=tuple(spec.example_inputs), downstream=downstream,
                before_run=probe.reset_calls, variables=tuple(spec.variables), probe=probe)
    record: dict[str, Any] = {}
    try:
        runs, traced = run_in_function(strategy, case, tape_gradients)
        record.update(runs=runs, kinds=traced.kinds)
    except UserCodeError as exc:
        record["user_error"] = exc.problem
    except Exception as exc:  # noqa: BLE001 - reported to the parent, which classifies it
        phase = "run" if isinstance(exc, tf.errors.OpError) else "build"
        record["error"] = (type(exc).__name__, str(exc)[:2000], phase)
    if probe.error is not None:
        record["user_error"] = probe.error.problem
    record.update(traces=probe.traces, violations=list(probe.violations))
    return record


def main(job_path: str, out_path: str) -> None:
    import tensorflow as tf

    with open(job_path, "rb") as job_file:
        job = pickle.load(job_file)  # noqa: S301 - written by the parent process
    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    results = [run_case(strategy, spec_case) for spec_case in job]
    with open(out_path, "wb") as out:
        pickle.dump(results, out)


if __name__ == "__main__":
    from compat.child import die_with_parent

    die_with_parent()
    main(sys.argv[1], sys.argv[2])
