"""benchmarks/rewrite_speed.py runs, exits 0 when its targets are met, 1 when one is missed, 2 on a usage error."""

import re
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "rewrite_speed.py"


def _run(*args):
    return subprocess.run([sys.executable, str(SCRIPT), "--real=", *args], capture_output=True, text=True, timeout=600)


def test_exit_codes_follow_the_targets():
    met = _run("--sizes=3,8", "--repeats=1", "--judged-from=1", "--time-target=1000", "--linearity=1000",
               "--rss-ratio=1000")
    assert met.returncode == 0, met.stdout + met.stderr
    assert re.search(r"^start-up \(a one-line file\): .* floor [\d.]+ s wall", met.stdout, re.M), met.stdout
    for size in (3, 8):
        line = re.search(rf"^{size} KB module: ([\d,]+) KB, (\d+) sites rewritten, (\d+) TODO; .* app/floor "
                         r"[\d.]+x wall, [\d.]+x RSS; per 100 KB .*", met.stdout, re.M)
        assert line, met.stdout
        assert int(line[1].replace(",", "")) >= size and int(line[2]) > 0 and int(line[3]) > 0
    assert "linearity: CPU seconds per KB of the 8 KB module" in met.stdout
    assert met.stdout.strip().endswith("PASS")
    missed = _run("--sizes=3", "--repeats=1", "--judged-from=1", "--time-target=0")
    assert missed.returncode == 1 and "MISS: 3 KB module" in missed.stdout, missed.stdout + missed.stderr
    for bad in ("--sizes=0", "--repeats=0", "--sizes=x"):
        usage = _run(bad)
        assert usage.returncode == 2 and ("at least 1" in usage.stderr or "comma-separated" in usage.stderr), bad


def test_the_legacy_module_is_deterministic_and_as_large_as_asked():
    sys.path.insert(0, str(SCRIPT.parent))
    from rewrite_speed import legacy_module

    text = legacy_module(20_000)
    assert text == legacy_module(20_000) and len(text) >= 20_000
    assert legacy_module(40_000).startswith(text)
