"""compat-check with no flags, as a new user runs it first: the whole catalogue, one screen, progress in the log."""

import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow  # a whole-system run: `pytest --runslow` (CI) runs it


def test_the_default_run_answers_in_one_screen_and_logs_progress_when_stderr_is_a_file(tmp_path):
    """The whole default catalogue, as a new user runs it with stderr redirected (a few minutes)."""
    from compat.catalogue import CATALOGUE

    log = tmp_path / "stderr.log"
    with open(log, "w") as stderr:
        done = subprocess.run([sys.executable, "-m", "compat.apps.check"], stdout=subprocess.PIPE, stderr=stderr,
                              text=True, cwd=tmp_path, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}, timeout=3000)
    lines = done.stdout.splitlines()
    # The verdict is the release's (TensorFlow 2.12 refuses one native SavedModel cell, multi_output_int under
    # dynamic_batch: exit 1 there); the one screen must say it last, with the unexpected cells above it.
    verdict = "OK: every native variant agrees" if done.returncode == 0 else "FAIL: "
    assert done.returncode in (0, 1) and lines[-1].startswith(verdict), done.stdout[-3000:]
    if done.returncode:
        assert any(line.startswith("Unexpected differences in native variants: ") and not line.endswith("none")
                   for line in lines)
    assert len(lines) <= 60 and max(map(len, lines)) <= 240, done.stdout
    answer = done.stdout[done.stdout.index("Is `grad` always ones?"):done.stdout.index("Migration pitfalls")]
    assert all(name in answer for name in CATALOGUE)
    assert "ones in sum;" in answer and "IndexedSlices in gather" in answer
    assert "never called in stop_gradient" in answer
    pitfall_lines = [line for line in lines if " cells, " in line and " under " in line]
    counts = [int(line.split()[0]) for line in pitfall_lines]
    assert counts and counts == sorted(counts, reverse=True)
    progress = log.read_text().splitlines()
    assert progress[0] == "compat-check: importing TensorFlow (0:00:00 elapsed)"
    assert any(line.startswith("compat-check: starting ") and " workers " in line for line in progress)
    total = len(CATALOGUE)  # one unit per spec in float32
    assert f"compat-check: {total}/{total} spec x dtype, " in "\n".join(progress)
