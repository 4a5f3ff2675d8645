"""compat.dask_executor: a check's units on a Dask LocalCluster give the local report; a crashing unit is its cells."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("distributed", reason="Dask's distributed is not installed: pip install -e '.[dask]'")

from compat.apps._request import CheckRequest  # noqa: E402
from compat.dask_executor import check_on_dask  # noqa: E402
from compat.reports import render  # noqa: E402
from compat.workers import check_in_workers  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def _masked(report):
    """The JSON report without what differs per process: numbered names in messages, each unit's seconds."""
    text = render(report, "json")
    document = json.loads(text)
    document["units"] = [{**unit, "seconds": 0} for unit in document["units"]]
    return document


def test_units_on_a_local_cluster_give_the_local_report(tmp_path, monkeypatch):
    (tmp_path / "crashing.py").write_text(textwrap.dedent('''
        import os
        import numpy as np
        import tensorflow as tf
        import compat

        def _exits(x):
            os._exit(7)

        X = [np.array([1.0, -2.0], np.float32)]
        GOOD = compat.GradientSpec("good", tf.sign, lambda i, o, u: [u[0]], X, op_type="Sign")
        EXITS = compat.GradientSpec("exits", _exits, lambda i, o, u: [u[0]], X)
        LAST = compat.GradientSpec("last", tf.sign, lambda i, o, u: [2.0 * u[0]], X, op_type="Sign")
    '''))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), str(tmp_path)]))  # what the workers import
    request = CheckRequest(specs=("crashing.py:GOOD", "crashing.py:EXITS", "crashing.py:LAST"), scenarios=("sum",))
    axes = dict(variants=["custom_gradient@eager_tape", "override_map@v1_session"], dtypes=["float32", "float64"])
    done = []
    on_dask = check_on_dask(request, jobs=2, progress=lambda step, total, label: done.append((step, total)), **axes)
    by_spec = {}
    for cell in on_dask.cells:
        by_spec.setdefault(cell.spec, []).append(cell)
    assert list(by_spec) == ["good", "exits", "last"]  # report order, whoever finished first
    assert all(cell.status == "error" and "the Dask worker running this spec failed" in cell.result.message
               for cell in by_spec["exits"])  # the crash is this unit's cells, not a dead run
    bad = [(c.spec, c.dtype, c.variant, c.result.status, c.result.calls, c.result.message[:300])
           for c in by_spec["good"] + by_spec["last"] if c.result.status != "ok" or c.result.calls != 1]
    assert not bad
    assert done[-1] == (6, 6)
    local = check_in_workers(CheckRequest(specs=("crashing.py:GOOD", "crashing.py:LAST"), scenarios=("sum",)),
                             jobs=1, **axes)
    dask_cells = [cell for cell in _masked(on_dask)["cells"] if cell["spec"] != "exits"]
    assert dask_cells == _masked(local)["cells"]


def test_compat_check_runs_on_dask_with_its_flags(tmp_path):
    out = tmp_path / "check.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "compat.apps.check", "--executor=dask", "--jobs=1", "--noprogress",
                           "--specs=sign_ste", "--scenarios=sum", "--variants=custom_gradient@eager_tape",
                           "--shard=1/1", "--format=json", f"--output={out}"],
                          capture_output=True, text=True, env=env, cwd=tmp_path, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(out.read_text())
    assert [cell["variant"] for cell in report["cells"]] == ["custom_gradient@eager_tape"]
    assert report["shard"] == {"index": 1, "count": 1}
    refused = subprocess.run([sys.executable, "-m", "compat.apps.check", "--scheduler=tcp://127.0.0.1:1",
                              "--specs=sign_ste"], capture_output=True, text=True, env=env, check=False)
    assert refused.returncode == 2 and "add --executor=dask" in refused.stderr
