"""An interrupted run's temporary files are removed by a later one; nothing else ever is."""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path

import pytest

from compat.rewrite import replace


def _aged(path: Path, seconds: float = 3600) -> Path:
    then = time.time() - seconds
    os.utime(path, (then, then))
    return path


@pytest.fixture
def leftovers(tmp_path: Path) -> dict[str, Path]:
    """One stale temporary of ste.py, and files that look alike but must stay."""
    names = {
        "stale": ".ste.py.0123abcd.tmp",
        "stale_mkstemp": ".ste.py.vhz_khd2.tmp",  # tempfile.mkstemp's name, as earlier versions wrote
        "fresh": ".ste.py.89abcdef.tmp",  # a live writer's, or too young to tell
        "locked": ".ste.py.deadbeef.tmp",  # a live writer holds its lock
        "another_file": ".other.py.0123abcd.tmp",  # not the file being written
        "not_our_pattern": ".ste.py.backup.tmp",
        "user_file": "ste.py.0123abcd.tmp",
    }
    made = {key: tmp_path / name for key, name in names.items()}
    for key, path in made.items():
        path.write_text("partial")
        if key != "fresh":
            _aged(path)
    (tmp_path / "ste.py").write_text("x = 1\n")
    return made


def test_only_stale_unlocked_temporaries_of_the_written_file_are_removed(leftovers: dict[str, Path],
                                                                         tmp_path: Path) -> None:
    with open(leftovers["locked"], "rb") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        removed = replace.remove_stale_temporaries(str(tmp_path), "ste.py", {os.geteuid()})
    assert sorted(removed) == [str(leftovers["stale"]), str(leftovers["stale_mkstemp"])]
    assert {key for key, path in leftovers.items() if path.exists()} == {
        "fresh", "locked", "another_file", "not_our_pattern", "user_file"}


@pytest.mark.parametrize("name", [".ste.py.0123abc.tmp", ".ste.py.0123abcde.tmp", ".ste.py.0123ABCD.tmp",
                                  ".ste.py.0123abcd.tmp.bak", "..ste.py.0123abcd.tmp", ".xste.py.0123abcd.tmp"])
def test_near_misses_of_the_pattern_are_left_alone(tmp_path: Path, name: str) -> None:
    (tmp_path / name).write_text("x")
    _aged(tmp_path / name)
    assert replace.remove_stale_temporaries(str(tmp_path), "ste.py", {os.geteuid()}) == []


def test_a_temporary_owned_by_someone_else_is_left_alone(leftovers: dict[str, Path], tmp_path: Path) -> None:
    assert replace.remove_stale_temporaries(str(tmp_path), "ste.py", {os.geteuid() + 1}) == []
    assert leftovers["stale"].exists()


def test_a_symlink_with_the_pattern_is_never_followed_or_removed(tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    link = tmp_path / ".ste.py.0123abcd.tmp"
    link.symlink_to(victim)
    os.utime(link, (0, 0), follow_symlinks=False)
    assert replace.remove_stale_temporaries(str(tmp_path), "ste.py", {os.geteuid()}) == []
    assert link.is_symlink() and victim.read_text() == "keep me"


def test_the_temporary_a_write_creates_matches_the_pattern_and_is_locked(tmp_path: Path) -> None:
    fd, path = replace._create_temporary(str(tmp_path), "ste.py")
    try:
        assert replace.temporary_pattern("ste.py").fullmatch(os.path.basename(path))
        _aged(Path(path))
        assert replace.remove_stale_temporaries(str(tmp_path), "ste.py", {os.geteuid()}) == []
    finally:
        os.close(fd)
    assert replace.remove_stale_temporaries(str(tmp_path), "ste.py", {os.geteuid()}) == [path]


def test_a_write_removes_the_stale_temporaries_of_its_file(leftovers: dict[str, Path], tmp_path: Path) -> None:
    target = tmp_path / "ste.py"
    snapshot = replace.Snapshot.of(target.stat(), target.read_bytes())
    assert replace.replace(str(target), b"x = 2\n", snapshot) is None
    assert target.read_text() == "x = 2\n"
    # the stale ones (nobody holds "locked" here) are gone, the fresh one stays, the write left none of its own
    assert sorted(p.name for p in tmp_path.iterdir() if replace.temporary_pattern("ste.py").fullmatch(p.name)) == [
        ".ste.py.89abcdef.tmp"]
    assert leftovers["another_file"].exists() and leftovers["not_our_pattern"].exists()
