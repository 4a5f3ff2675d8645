"""compat.sharding: --shard=K/N parsing, the deterministic split, durations from a report."""

import json

import pytest

from compat.sharding import Shard, fingerprint, load_durations, parse_shard, split


def test_a_shard_is_k_of_n_and_a_bad_one_names_the_flag():
    assert parse_shard("2/3") == Shard(2, 3)
    for bad in ("0/3", "4/3", "1/0", "3", "a/b", "-1/2"):
        with pytest.raises(ValueError, match=r"^shard=.*e\.g\. shard=1/"):
            parse_shard(bad)
        with pytest.raises(ValueError, match=r"--shard=.*e\.g\. --shard=1/"):
            parse_shard(bad, "--shard")


def test_without_durations_units_are_dealt_round_robin_and_every_unit_runs_once():
    shards = split([f"u{i}" for i in range(7)], 3)
    assert shards == [[0, 3, 6], [1, 4], [2, 5]]
    assert split(["a"], 3) == [[0], [], []]  # more shards than units: the others run nothing


def test_durations_put_the_longest_first_onto_the_least_loaded_shard():
    labels = ["a", "b", "c", "d", "e"]
    durations = {"a": 10.0, "b": 1.0, "c": 6.0, "d": 5.0, "e": 1.0}
    shards = split(labels, 2, durations)
    assert shards == [[0, 1, 4], [2, 3]]  # a=10 | c=6, d=5 (11) | b onto a's (11) | e: a tie, the lower shard
    loads = [sum(durations[labels[u]] for u in shard) for shard in shards]
    assert max(loads) - min(loads) <= 1.0
    assert split(labels, 2, durations) == shards  # every shard computes the same split


def test_ties_go_to_the_lower_shard_in_unit_order():
    assert split(["a", "b", "c", "d"], 2, {"a": 1.0, "b": 1.0, "c": 1.0, "d": 1.0}) == [[0, 2], [1, 3]]


def test_a_unit_without_a_recorded_duration_counts_as_the_mean():
    shards = split(["a", "b", "new"], 2, {"a": 4.0, "b": 2.0})
    assert shards == [[0], [1, 2]]


def test_durations_come_from_a_reports_units_and_a_bad_file_names_the_flag(tmp_path):
    report = tmp_path / "check.json"
    report.write_text(json.dumps({"units": [{"spec": "sign_ste", "dtype": "float32", "seconds": 1.5}]}))
    assert load_durations(report) == {"sign_ste float32": 1.5}
    report.write_text(json.dumps({"cells": []}))
    with pytest.raises(ValueError, match=r"^durations=.*check\.json: no unit durations"):
        load_durations(report)
    with pytest.raises(ValueError, match=r"--durations=.*check\.json: no unit durations"):
        load_durations(report, "--durations")
    with pytest.raises(ValueError, match=r"^durations=.*missing\.json: not a readable JSON report"):
        load_durations(tmp_path / "missing.json")
    with pytest.raises(ValueError, match=r"written by this compat-rewrite \(its JSON format"):
        load_durations(report, command="compat-rewrite")


def test_the_fingerprint_depends_on_the_flags_not_their_order():
    assert fingerprint({"a": [1], "b": None}) == fingerprint({"b": None, "a": [1]})
    assert fingerprint({"a": [1]}) != fingerprint({"a": [2]})
