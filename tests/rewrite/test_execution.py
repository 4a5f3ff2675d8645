"""The golden rewrites compute what the legacy modules compute: same forward values and input gradients.

Each legacy module runs in a tf.compat.v1 Graph + Session (tensorflow seen as tensorflow.compat.v1, as legacy
code expects); its golden rewrite runs in TF2 both in a Graph + Session and eagerly under a GradientTape. Every
entry point is checked under two downstream losses: reduce_sum(y) and reduce_sum(y * w) with fixed w.
"""

from __future__ import annotations

import pytest

pytest.importorskip("tensorflow")

CONTEXTS = ("v1_session", "eager_tape")


@pytest.fixture(scope="module")
def loaded(runner) -> dict:
    """Every module loaded once per process (legacy registrations cannot be made twice)."""
    return {
        name: (runner.load(runner.LEGACY / f"{name}.py", legacy=True),
               runner.load(runner.EXPECTED / f"{name}.py", legacy=False))
        for name in runner.corpus_names()
    }


@pytest.mark.parametrize("context", CONTEXTS)
@pytest.mark.parametrize("loss", ["sum", "weighted"])
def test_rewrite_matches_legacy(runner, loaded, corpus_name: str, context: str, loss: str) -> None:
    legacy, rewritten = loaded[corpus_name]
    assert legacy.GRADCOMPAT_ENTRIES == rewritten.GRADCOMPAT_ENTRIES
    found = runner.differences(legacy, rewritten, legacy.GRADCOMPAT_ENTRIES, contexts=(context,), losses=(loss,))
    assert not found, f"{corpus_name}: " + "\n".join(found)
