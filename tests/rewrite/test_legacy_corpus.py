"""The legacy corpus is real TF1 code: every entry point builds and differentiates in a v1 Graph + Session."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("tensorflow")


def test_corpus_is_large_enough(runner) -> None:
    assert len(runner.corpus_names()) >= 14


def test_every_module_declares_its_entries(runner) -> None:
    for name in runner.corpus_names():
        text = (runner.LEGACY / f"{name}.py").read_text()
        assert "GRADCOMPAT_ENTRIES = {" in text, f"{name}.py: declare GRADCOMPAT_ENTRIES at the top"


@pytest.fixture(scope="module")
def legacy_modules(runner) -> dict:
    return {name: runner.load(runner.LEGACY / f"{name}.py", legacy=True)
            for name in runner.corpus_names()}


def test_every_entry_runs_in_a_v1_session_with_gradients(runner, legacy_modules: dict) -> None:
    for name, module in legacy_modules.items():
        for entry, signature in module.GRADCOMPAT_ENTRIES.items():
            values = runner.inputs_for(signature, seed=0)
            forward, grads = runner.run_session(module, entry, values, "weighted")
            assert all(np.all(np.isfinite(f)) for f in forward), f"{name}.{entry}"
            assert any(g is not None and np.any(g != 0) for g in grads), f"{name}.{entry}: no gradient at all"
