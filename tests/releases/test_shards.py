"""Shards that do not make one run: the library says so in its own terms, a command line with its flags."""

import copy
import json
import pickle

import pytest

from compat.releases.__main__ import main
from compat.releases.shards import MissingShard, ordered_shards


def _shard(index, count, release="2.21"):
    return {"shard": {"index": index, "count": count}, "version": "1", "tensorflow": "2.21", "run": None,
            "release": release}


def test_a_missing_shard_is_named_with_its_data_and_without_a_flag():
    with pytest.raises(MissingShard) as raised:
        ordered_shards([("one.json", _shard(1, 3)), ("three.json", _shard(3, 3))], "compat-rewrite")
    error = raised.value
    assert (error.index, error.count, error.command, error.release) == (2, 3, "compat-rewrite", "2.21")
    assert str(error).startswith("shard 2/3 of release 2.21 is missing (given: one.json, three.json): run "
                                 "compat-rewrite's shard 2/3 with the same arguments")
    assert "--" not in str(error)
    assert str(pickle.loads(pickle.dumps(error))) == str(error)


def test_python_m_compat_releases_says_the_command_line_of_the_missing_shard(report, tmp_path, capsys):
    shard = copy.deepcopy(report)
    shard["shard"] = {"index": 1, "count": 2}
    shard["units"] = [{"spec": "scaled_ste", "dtype": dtype, "seconds": 1.0} for dtype in shard["dtypes"]]
    path = tmp_path / "check-tf2.21-shard-1.json"
    path.write_text(json.dumps(shard), encoding="utf-8")
    with pytest.raises(SystemExit) as exit_info:
        main([str(path), f"--output_dir={tmp_path / 'out'}"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "shard 2/2 of release 2.21 is missing" in err
    assert "run `compat-check --shard=2/2 --format=json` with the same flags" in err
