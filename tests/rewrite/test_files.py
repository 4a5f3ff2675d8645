"""Files are rewritten safely: regular files only, atomically, keeping permissions, never over a newer version."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest

from compat.rewrite import files, rewrite_file

LEGACY = """import tensorflow as tf


def f(x):
    with tf.get_default_graph().gradient_override_map({"Sign": "Identity"}):
        return tf.sign(x)
"""


@pytest.fixture
def legacy_file(tmp_path: Path) -> Path:
    path = tmp_path / "ste.py"
    path.write_text(LEGACY)
    path.chmod(0o640)
    return path


def test_dry_run_changes_nothing(legacy_file: Path) -> None:
    result = rewrite_file(str(legacy_file))
    assert result.status == "rewritten" and not result.written
    assert legacy_file.read_text() == LEGACY


def test_in_place_writes_atomically_and_keeps_permissions(legacy_file: Path) -> None:
    result = rewrite_file(str(legacy_file), in_place=True)
    assert result.status == "rewritten" and result.written
    assert legacy_file.read_text() == result.rewritten != LEGACY
    assert stat.S_IMODE(legacy_file.stat().st_mode) == 0o640
    assert sorted(p.name for p in legacy_file.parent.iterdir()) == ["ste.py"], "no temporary file left behind"
    again = rewrite_file(str(legacy_file), in_place=True)
    assert again.status == "unchanged" and not again.written


def test_file_changed_since_read_is_skipped(legacy_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = files.rewrite_source

    def edit_meanwhile(text: str, path: str, tree=None):  # another editor saves the file while we rewrite it
        result = real(text, path, tree)
        legacy_file.write_text(LEGACY + "# edited meanwhile\n")
        return result

    monkeypatch.setattr(files, "rewrite_source", edit_meanwhile)
    result = rewrite_file(str(legacy_file), in_place=True)
    assert result.status == "skipped" and "changed since it was read" in result.reason
    assert legacy_file.read_text().endswith("# edited meanwhile\n")
    assert sorted(p.name for p in legacy_file.parent.iterdir()) == ["ste.py"]


def test_unparsable_file_is_reported_and_not_touched(tmp_path: Path) -> None:
    path = tmp_path / "py2.py"
    text = "import tensorflow as tf\nprint 'gradient_override_map'\n"
    path.write_text(text)
    result = rewrite_file(str(path), in_place=True)
    assert result.status == "failed" and "syntax error" in result.reason
    assert path.read_text() == text


def test_non_utf8_file_fails_with_advice(tmp_path: Path) -> None:
    path = tmp_path / "latin.py"
    path.write_bytes(b"# caf\xe9\nimport tensorflow as tf  # RegisterGradient\n")
    result = rewrite_file(str(path), in_place=True)
    assert result.status == "failed" and "UTF-8" in result.reason


def test_declared_encoding_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "latin.py"
    source = "# -*- coding: latin-1 -*-\n# café\n" + LEGACY
    path.write_bytes(source.encode("latin-1"))
    result = rewrite_file(str(path), in_place=True)
    assert result.status == "rewritten"
    assert path.read_bytes().decode("latin-1") == result.rewritten


def test_huge_file_is_skipped_with_a_clear_reason(tmp_path: Path) -> None:
    path = tmp_path / "big.py"
    path.write_text(LEGACY + "# padding\n" * 2000)
    result = rewrite_file(str(path), in_place=True, max_file_bytes=1000)
    assert result.status == "skipped" and "larger than the rewrite limit" in result.reason
    assert "max_file_bytes" in result.reason


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_fifo_and_symlink_to_fifo_are_skipped_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.py"
    os.mkfifo(fifo)
    link = tmp_path / "link.py"
    link.symlink_to(fifo)
    results: dict[str, object] = {}

    def run() -> None:
        results["fifo"] = rewrite_file(str(fifo), in_place=True)
        results["link"] = rewrite_file(str(link), in_place=True)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(timeout=10)
    assert not worker.is_alive(), "rewrite_file blocked on a FIFO"
    for key in ("fifo", "link"):
        result = results[key]
        assert result.status == "skipped" and "not a regular file" in result.reason  # type: ignore[attr-defined]


def test_symlink_to_regular_file_rewrites_the_target(legacy_file: Path, tmp_path: Path) -> None:
    link = tmp_path / "alias.py"
    link.symlink_to(legacy_file)
    result = rewrite_file(str(link), in_place=True)
    assert result.written and link.is_symlink()
    assert legacy_file.read_text() == result.rewritten


def test_read_only_file_is_not_replaced(legacy_file: Path) -> None:
    legacy_file.chmod(0o444)
    result = rewrite_file(str(legacy_file), in_place=True)
    assert result.status == "skipped" and not result.written
    assert "read-only (mode 0444)" in result.reason and "chmod u+w" in result.reason
    assert legacy_file.read_text() == LEGACY and stat.S_IMODE(legacy_file.stat().st_mode) == 0o444
    assert sorted(p.name for p in legacy_file.parent.iterdir()) == ["ste.py"]


def test_hard_linked_file_is_not_replaced_so_every_name_keeps_the_same_text(legacy_file: Path) -> None:
    other = legacy_file.parent / "other_name.py"
    os.link(legacy_file, other)
    result = rewrite_file(str(legacy_file), in_place=True)
    assert result.status == "skipped" and "2 hard links" in result.reason
    assert os.path.samefile(legacy_file, other) and legacy_file.read_text() == LEGACY


def test_owner_and_group_are_kept_when_root_rewrites_another_users_file(legacy_file: Path, give_to_nobody) -> None:
    give_to_nobody(legacy_file)
    legacy_file.chmod(0o4750)  # a set-id bit, which chown would clear if done after chmod
    result = rewrite_file(str(legacy_file), in_place=True)
    assert result.written, result.reason
    st = legacy_file.stat()
    assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (65534, 65534, 0o4750)


def test_a_file_whose_only_change_is_todo_comments_is_todo_not_rewritten(tmp_path: Path) -> None:
    path = tmp_path / "todo.py"
    source = ("import tensorflow.compat.v1 as tf\nMAP = {'Sign': 'Identity'}\n\n\ndef f(x):\n"
              "    with tf.get_default_graph().gradient_override_map(MAP):\n        return tf.sign(x)\n")
    path.write_text(source)
    result = rewrite_file(str(path), in_place=True)
    assert result.status == "todo" and result.written
    assert [s.outcome for s in result.sites] == ["todo"] and "# TODO(gradcompat)" in path.read_text()
    again = rewrite_file(str(path), in_place=True)
    assert again.status == "unchanged" and [s.outcome for s in again.sites] == ["todo"], "found again, counted"


def test_a_skipped_file_lists_no_rewritten_site(legacy_file: Path) -> None:
    legacy_file.chmod(0o444)
    result = rewrite_file(str(legacy_file), in_place=True)
    assert result.status == "skipped" and result.sites
    assert {s.outcome for s in result.sites} == {"skipped"}
    assert {s["outcome"] for s in result.as_dict()["sites"]} == {"skipped"}  # type: ignore[union-attr]


def test_non_utf8_file_name_has_its_bytes_in_the_json(tmp_path: Path) -> None:
    name = os.path.join(os.fsencode(tmp_path), b"caf\xe9.py")
    with open(name, "wb") as handle:
        handle.write(LEGACY.encode())
    entry = rewrite_file(os.fsdecode(name)).as_dict()
    assert entry["path"] == f"{tmp_path}/caf\\xe9.py"
    assert bytes.fromhex(entry["path_bytes_hex"]) == name  # type: ignore[arg-type]
    assert "path_bytes_hex" not in rewrite_file(str(tmp_path / "plain.py")).as_dict()


def test_a_file_whose_owner_cannot_be_kept_is_not_replaced(legacy_file: Path, monkeypatch: pytest.MonkeyPatch,
                                                           give_to_nobody) -> None:
    give_to_nobody(legacy_file)

    def not_permitted(fd: int, uid: int, gid: int) -> None:  # what a non-root user gets for another's file
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(os, "fchown", not_permitted)
    result = rewrite_file(str(legacy_file), in_place=True)
    assert result.status == "skipped" and "rewrite it as its owner" in result.reason, result.reason
    assert legacy_file.read_text() == LEGACY and legacy_file.stat().st_uid == 65534
    assert sorted(p.name for p in legacy_file.parent.iterdir()) == ["ste.py"]


def test_a_python2_file_fails_with_its_legacy_sites_counted_and_says_to_port_it(tmp_path):
    path = tmp_path / "py2.py"
    path.write_text("import tensorflow as tf\n\n@tf.RegisterGradient('Py2Half')\ndef _half(op, grad):\n"
                    "    print 'half'\n    return grad * 0.5\n\ndef f(x):\n"
                    "    with tf.get_default_graph().gradient_override_map({'Sign': 'Py2Half'}):\n"
                    "        return tf.sign(x)\n")
    result = rewrite_file(str(path))
    assert result.status == "failed" and "port it to Python 3 first" in result.reason
    assert [(s.line, s.pattern, s.outcome) for s in result.sites] == [(3, "register_gradient", "skipped"),
                                                                     (9, "override_map", "skipped")]
