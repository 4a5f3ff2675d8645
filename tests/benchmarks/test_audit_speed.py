"""benchmarks/audit_speed.py exits 0 when its targets are met, 1 when one is missed, 2 on a usage error."""

import re
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "audit_speed.py"


def _run(tree, *args):
    return subprocess.run([sys.executable, str(SCRIPT), f"--tree={tree}", "--skip-upgrade", "--skip-big-file", *args],
                          capture_output=True, text=True, timeout=300)


def test_exit_codes_follow_the_targets(tmp_path):
    (tmp_path / "legacy.py").write_text('import tensorflow as tf\n\n@tf.RegisterGradient("G")\ndef g(op, dy):\n'
                                        '    return dy\n')
    (tmp_path / "clean.py").write_text("x = 1\n")
    met = _run(tmp_path, "--jobs=1,2", "--repeats=2", "--default-target=1000", "--strict-ratio=1000",
               "--rss-growth=1000")
    assert met.returncode == 0, met.stdout + met.stderr
    assert "median of 2" in met.stdout
    assert "--strict --jobs=2: 2 files, 6 lines" in met.stdout and "(1 of 2 files parsed)" in met.stdout
    assert re.search(r"floor: .* 2 processes, .* median of 2 [\d.]+ s wall .* --strict --jobs=2 takes [\d.]+x that",
                     met.stdout), met.stdout
    assert "4x tree --strict --jobs=2: 8 files" in met.stdout and met.stdout.strip().endswith("PASS")
    missed = _run(tmp_path, "--jobs=1", "--repeats=1", "--strict-ratio=0")
    assert missed.returncode == 1 and "MISS: --strict audit" in missed.stdout
    for bad in ("--jobs=0", "--repeats=0"):
        usage = _run(tmp_path, bad)
        assert usage.returncode == 2 and "at least 1" in usage.stderr, bad
