"""The real-code corpus (tests/data/real): manifest, licence texts and stored bytes agree; pytest never collects it."""

from __future__ import annotations

import collections
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).absolute().parent.parent
CORPUS = REPO / "tests" / "data" / "real"
# SPDX id -> words its licence text must contain (MIT and BSD texts must also carry a copyright notice).
LICENCES = {
    "MIT": ("Permission is hereby granted", "Copyright"),
    "Apache-2.0": ("Apache License", "Version 2.0"),
    "BSD-3-Clause": ("BSD 3-Clause", "Redistribution and use", "Copyright"),
    "BSD-2-Clause": ("Redistribution and use", "Copyright"),
    "ISC": ("Permission to use, copy, modify", "Copyright"),
}
FIELDS = {"repository", "path", "commit", "licence", "url", "sha256", "stored_as", "patterns"}
LEGACY_PATTERNS = {"RegisterGradient", "gradient_override_map", "grad_func", "python_grad_func"}
PATTERN_NAMES = LEGACY_PATTERNS | {"load_op_library", "REGISTER_OP"}
CONTEXT_KINDS = {"op_definition", "op_loader"}  # a checkout's files beside the legacy ones: C++ ops, their loaders


def _entries() -> list[dict[str, Any]]:
    return json.loads((CORPUS / "MANIFEST.json").read_text())["files"]


def _licence_file(repository: str) -> Path:
    return CORPUS / "LICENSES" / repository.replace("/", "__")


def test_every_entry_pins_its_origin() -> None:
    entries = _entries()
    for entry in entries:
        where = f"tests/data/real/MANIFEST.json entry {entry.get('stored_as')!r}"
        assert FIELDS <= set(entry), f"{where} misses {sorted(FIELDS - set(entry))}"
        assert re.fullmatch(r"[0-9a-f]{40}", entry["commit"]), f"{where}: commit must be a full hash"
        assert entry["stored_as"] == entry["repository"].replace("/", "__") + "/" + entry["path"].replace("/", "__")
        assert entry["url"] == f"https://github.com/{entry['repository']}/blob/{entry['commit']}/{entry['path']}"
        assert entry["licence"] in LICENCES, f"{where}: {entry['licence']} is not a licence kept as test data"
        assert entry["patterns"] and set(entry["patterns"]) <= PATTERN_NAMES, f"{where}: patterns {entry['patterns']}"
        assert re.fullmatch(r"[0-9a-f]{64}", entry["sha256"]), f"{where}: sha256 must be 64 hex digits"
    stored = [e["stored_as"] for e in entries]
    assert len(stored) == len(set(stored)), "two manifest entries store the same file"


def test_the_corpus_is_as_large_as_its_brief_asks() -> None:
    legacy = [e for e in _entries() if set(e["patterns"]) & LEGACY_PATTERNS]
    assert len(legacy) >= 45 and len({e["repository"] for e in legacy}) >= 28


def test_context_files_define_ops_for_a_legacy_file_of_their_own_repository() -> None:
    entries = _entries()
    legacy_dirs = {(e["repository"], e["path"].rsplit("/", 1)[0]) for e in entries
                   if set(e["patterns"]) & LEGACY_PATTERNS}
    for entry in entries:
        if set(entry["patterns"]) & LEGACY_PATTERNS:
            assert entry.get("kind") not in CONTEXT_KINDS, entry["stored_as"]
            continue
        where = f"tests/data/real/MANIFEST.json entry {entry['stored_as']!r}"
        assert entry.get("kind") in CONTEXT_KINDS, f"{where}: with no legacy pattern, a kind of {CONTEXT_KINDS}"
        expected = "REGISTER_OP" if entry["kind"] == "op_definition" else "load_op_library"
        assert entry["patterns"] == [expected], where
        directory = entry["path"].rsplit("/", 1)[0]
        assert any(repo == entry["repository"] and (directory == d or directory.startswith(d + "/"))
                   for repo, d in legacy_dirs), f"{where}: no legacy file of its repository in or above its directory"


def test_every_repository_has_its_licence_text() -> None:
    by_repository = collections.defaultdict(set)
    for entry in _entries():
        by_repository[entry["repository"]].add(entry["licence"])
    for repository, licences in by_repository.items():
        assert len(licences) == 1, f"{repository}: its files name different licences {sorted(licences)}"
        path = _licence_file(repository)
        assert path.is_file(), f"{repository} has no licence text: save its licence file as {path}"
        text = path.read_text(encoding="utf-8")
        missing = [word for word in LICENCES[licences.pop()] if word not in text]
        assert not missing, f"{path} does not read like its manifest licence: no {missing}"
    kept = {p.name for p in (CORPUS / "LICENSES").iterdir()}
    stale = kept - {r.replace("/", "__") for r in by_repository}
    assert not stale, f"licence texts of repositories the manifest no longer lists: {sorted(stale)}"


def test_stored_files_match_their_sha256() -> None:
    entries = _entries()
    present = [e for e in entries if (CORPUS / e["stored_as"]).is_file()]
    if not present:
        pytest.skip("the corpus files are not on disk: third-party code is never committed; restore them as "
                    "tests/data/real/README.md says")
    missing = [e["stored_as"] for e in entries if e not in present]
    assert not missing, f"{len(missing)} corpus files are missing (first: {missing[0]}); restore all or none"
    changed = [e["stored_as"] for e in present
               if hashlib.sha256((CORPUS / e["stored_as"]).read_bytes()).hexdigest() != e["sha256"]]
    assert not changed, f"stored bytes differ from the manifest's sha256 (files must stay as read): {changed}"


def test_pytest_never_collects_the_corpus(tmp_path: Path) -> None:
    # Projects name their files `*_test.py` and `test_*.py`: stored in the corpus, they must stay data.
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    (tmp_path / "tests" / "data" / "real" / "owner__repo").mkdir(parents=True)
    shutil.copy(REPO / "tests" / "conftest.py", tmp_path / "tests" / "conftest.py")
    (tmp_path / "tests" / "test_probe.py").write_text("def test_probe():\n    pass\n")
    for name in ("tf_ops__grouping__tf_grouping_op_test.py", "test_ops.py"):
        (tmp_path / "tests" / "data" / "real" / "owner__repo" / name).write_text("def test_third_party():\n    pass\n")
    env = {**os.environ, "PYTHONPATH": str(REPO), "TF_CPP_MIN_LOG_LEVEL": "3"}
    done = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert "test_probe.py::test_probe" in done.stdout, done.stdout + done.stderr
    assert "third_party" not in done.stdout, f"pytest collected corpus files:\n{done.stdout}"
