"""Fixtures for the rewriter's tests: the corpus runner, and one `corpus_name` parameter per legacy module."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

_HERE = Path(__file__).resolve().parent


def _load_runner() -> ModuleType:
    name = "_gradcompat_corpus_runner"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, _HERE / "corpus_runner.py")
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


@pytest.fixture(name="runner", scope="session")
def runner_fixture() -> ModuleType:
    """tests/rewrite/corpus_runner.py: load and run corpus modules."""
    return _load_runner()


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "corpus_name" in metafunc.fixturenames:
        metafunc.parametrize("corpus_name", _load_runner().corpus_names())
