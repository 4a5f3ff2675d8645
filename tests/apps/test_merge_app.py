"""compat-merge: the shards of a run merge into the report the run unsharded writes, in every format."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from compat.apps._request import CheckRequest
from compat.reports import render
from compat.reports.json_report import as_dict
from compat.reports.merged import merged_report, render_document
from compat.reports.timings import without_timings
from compat.reports.view import View
from compat.sharding import Shard
from compat.workers import check_in_workers

ROOT = Path(__file__).resolve().parents[2]
REQUEST = CheckRequest(specs=("sign_ste", "scaled_ste"), scenarios=("sum", "weighted"))
AXES = dict(dtypes=["float32", "float64"], variants=["custom_gradient@eager_tape", "override_map@v1_session"])
_PER_PROCESS = re.compile(r"(?<=_)\d+\b")
"""Numbers TensorFlow gives what it builds in a process (`__inference_body_67728`): they name other functions in
another run, sharded or not."""


def _masked(text):
    return _PER_PROCESS.sub("N", text)


@pytest.fixture(name="runs", scope="module")
def runs_fixture(tmp_path_factory):
    """The 2-spec, 2-dtype check run whole, and as 3 shards written as compat-check writes JSON."""
    whole = check_in_workers(REQUEST, jobs=1, **AXES)
    directory = tmp_path_factory.mktemp("shards")
    paths = []
    for index in (1, 2, 3):
        shard = check_in_workers(REQUEST, jobs=1, shard=Shard(index, 3), **AXES)
        paths.append(directory / f"shard-{index}.json")
        paths[-1].write_text(render(shard, "json"), encoding="utf-8")
    return whole, [str(path) for path in paths]


def test_three_shards_merge_into_the_whole_run_cell_for_cell(runs):
    whole, paths = runs
    shards = [json.loads(Path(path).read_text()) for path in paths]
    assert [len(shard["units"]) for shard in shards] == [2, 1, 1]  # 4 units dealt out: every shard ran some
    merged = merged_report(paths)
    expected = as_dict(whole)
    unmasked = (json.loads(_masked(json.dumps(document))) for document in (merged, expected))
    assert without_timings(next(unmasked)) == without_timings(next(unmasked))
    assert merged["summary"]["cells"] == 2 * 2 * 2 * 2 and merged["verdict"] == expected["verdict"]


@pytest.mark.parametrize("fmt,summary", [("table", True), ("table", False), ("markdown", False), ("json", False),
                                         ("html", False)])
def test_every_format_of_the_merged_shards_is_the_whole_runs(runs, fmt, summary):
    whole, paths = runs
    merged = merged_report(paths)
    merged["units"] = as_dict(whole)["units"]  # the seconds, the only field a run does not repeat
    mine = render_document(merged, fmt, summary=summary)
    assert _masked(mine) == _masked(render(whole, fmt, view=View(summary=summary)))


_WITHOUT_TENSORFLOW = "import sys; sys.modules['tensorflow'] = None; from compat.apps.merge import run; run()"
"""compat-merge with TensorFlow unimportable: merging and rendering reports must not need it (3 s, 500 MB)."""


def _merge(*args, cwd=ROOT):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-c", _WITHOUT_TENSORFLOW, *map(str, args)], capture_output=True,
                          text=True, env=env, cwd=cwd, check=False)


def test_merging_exits_as_the_run_would_and_writes_its_json(runs, tmp_path):
    whole, paths = runs
    out = tmp_path / "check.json"
    done = _merge(*paths, "--format=json", f"--output={out}")
    assert done.returncode == whole.exit_code, done.stderr
    assert json.loads(out.read_text())["cells"] == merged_report(paths)["cells"]


def test_a_missing_or_repeated_shard_is_a_usage_error_naming_it(runs):
    _, paths = runs
    missing = _merge(paths[0], paths[2])
    assert missing.returncode == 2
    assert "shard 2/3 of release" in missing.stderr and "--shard=2/3" in missing.stderr
    twice = _merge(paths[0], paths[1], paths[1], paths[2])
    assert twice.returncode == 2 and f"{paths[1]} and {paths[1]} are both shard 2/3" in twice.stderr


def _edited(path, tmp_path, name, change):
    document = json.loads(Path(path).read_text())
    change(document)
    edited = tmp_path / name
    edited.write_text(json.dumps(document))
    return str(edited)


def test_shards_of_other_runs_are_refused_naming_the_file(runs, tmp_path):
    _, paths = runs
    other_n = _edited(paths[2], tmp_path, "n4.json", lambda d: d["shard"].update(count=4))
    done = _merge(paths[0], paths[1], other_n)
    assert done.returncode == 2 and f"{other_n} is shard 3/4 but {paths[0]} is shard 1/3" in done.stderr
    version = _edited(paths[1], tmp_path, "old.json", lambda d: d.update(version="0.0.1"))
    done = _merge(paths[0], version, paths[2])
    assert done.returncode == 2 and f"{version}: its gradcompat version (0.0.1)" in done.stderr
    flags = _edited(paths[1], tmp_path, "flags.json", lambda d: d.update(run={"flags": {"dtypes": ["float16"]},
                                                                           "fingerprint": "x"}))
    done = _merge(paths[0], flags, paths[2])
    assert done.returncode == 2 and f"{flags}: its flags" in done.stderr
    assert "run every shard with the same specs, scenarios, variants, dtypes" in done.stderr


def test_shards_and_releases_merge_together_into_the_matrix(runs, tmp_path):
    _, paths = runs
    copies = []
    for path in paths:
        copies.append(tmp_path / Path(path).name.replace("shard", "check-tf2.20-shard"))
        copies[-1].write_text(Path(path).read_text())
    whole = tmp_path / "check-tf2.21.json"
    whole.write_text(json.dumps(merged_report(paths)))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "compat.releases", *map(str, copies), str(whole),
                           f"--output_dir={tmp_path / 'out'}"], capture_output=True, text=True, env=env, check=False)
    assert done.returncode == 0, done.stderr
    matrix = json.loads((tmp_path / "out" / "matrix.json").read_text())
    assert [r["release"] for r in matrix["releases"]] == ["2.20", "2.21"]
    assert matrix["summary"]["rows"] == 16 and all(set(row["cells"]) == {"2.20", "2.21"} for row in matrix["rows"])


def _check(*args):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "compat.apps.check", "--noprogress", *map(str, args)],
                          capture_output=True, text=True, env=env, cwd=ROOT, check=False)


def test_a_shard_report_says_which_shard_its_flags_and_its_units(tmp_path):
    durations = tmp_path / "earlier.json"
    durations.write_text(json.dumps({"units": [{"spec": "sign_ste", "dtype": "float32", "seconds": 9.0},
                                               {"spec": "sign_ste", "dtype": "float64", "seconds": 1.0},
                                               {"spec": "sign_ste", "dtype": "float16", "seconds": 1.0}]}))
    out = tmp_path / "shard.json"
    done = _check("--specs=sign_ste", "--dtypes=float32,float64,float16", "--scenarios=sum",
                  "--variants=custom_gradient@eager_tape", "--shard=2/2", f"--durations={durations}",
                  "--format=json", f"--output={out}")
    assert done.returncode == 0, done.stderr
    report = json.loads(out.read_text())
    assert report["shard"] == {"index": 2, "count": 2}
    assert [(u["spec"], u["dtype"]) for u in report["units"]] == [("sign_ste", "float64"), ("sign_ste", "float16")]
    assert {cell["dtype"] for cell in report["cells"]} == {"float64", "float16"}
    assert report["run"]["flags"]["dtypes"] == ["float32", "float64", "float16"] and report["run"]["fingerprint"]


@pytest.mark.parametrize("args,message", [
    (["--shard=3/2"], "--shard=3/2: K must be between 1 and N"),
    (["--shard=1of2"], "--shard=1of2: give K/N"),
    (["--durations=x.json"], "--durations=x.json balances --shard=K/N"),
    (["--shard=1/2", "--durations=no-such.json"], "--durations=no-such.json: not a readable JSON report"),
])
def test_a_bad_shard_or_durations_flag_is_a_usage_error_naming_it(args, message):
    done = _check("--specs=sign_ste", *args)
    assert done.returncode == 2 and message in done.stderr, done.stderr


def test_merging_nothing_says_which_reports_to_give_with_the_flags_that_make_them():
    done = _merge()
    assert done.returncode == 2, done.stderr
    assert "give the JSON reports of every shard of one run (compat-check --shard=K/N --format=json)" in done.stderr
