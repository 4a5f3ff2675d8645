"""Benchmark: `compat-check` on a 2,000,000-element input with a JSON report, peak memory against a floor.

Run: `python benchmarks/large_input.py [--elements=2000000] [--target_gib=2]`.

(a) *app*: `compat-check --specs=<a sign straight-through estimator on N float32 elements> --format=json
    --output=FILE` in a child process: every scenario and variant, the default array summaries.
(b) *floor*: a child process that imports TensorFlow and takes one `tf.custom_gradient` gradient of the same
    input eagerly: what any process touching that input costs.

Both children's peak RSS (ru_maxrss) are measured in the same run and printed with their ratio, with the
app's wall time and report size. Exit 0 when the app's peak RSS is within the target (2 GiB), 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

SPEC = textwrap.dedent('''
    import numpy as np
    import tensorflow as tf
    import compat

    LARGE = compat.GradientSpec(
        "large_ste", tf.sign, lambda i, o, u: [0.5 * tf.convert_to_tensor(u[0])],
        [np.linspace(-1.0, 1.0, {elements}, dtype=np.float32) + 0.3], op_type="Sign")
''')

FLOOR = textwrap.dedent('''
    import numpy as np
    import tensorflow as tf

    @tf.custom_gradient
    def ste(x):
        return tf.sign(x), lambda dy: 0.5 * dy

    x = tf.constant(np.linspace(-1.0, 1.0, {elements}, dtype=np.float32) + 0.3)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(ste(x))
    print(float(tf.reduce_sum(tape.gradient(y, x))))
''')


_WRAPPER = ("import json, resource, subprocess, sys, time; start = time.perf_counter(); "
            "done = subprocess.run(sys.argv[1:], capture_output=True, text=True); "
            "print(json.dumps([done.returncode, time.perf_counter() - start, "
            "resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, done.stderr[-2000:]]))")


def _run_measured(command: list[str], cwd: str) -> tuple[float, int]:
    """Run `command` under a small wrapper process that reports that one child's wall time and peak RSS (KiB):
    ru_maxrss of children is a maximum over all of them, so each measured command gets its own parent."""
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    done = subprocess.run([sys.executable, "-c", _WRAPPER, *command], cwd=cwd, env=env, capture_output=True,
                          text=True, check=True)
    code, elapsed, peak_kib, stderr = json.loads(done.stdout.strip().splitlines()[-1])
    if code not in (0, 1):
        sys.exit(f"{' '.join(command)} failed with exit code {code}:\n{stderr}")
    return elapsed, peak_kib


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--elements", type=int, default=2_000_000)
    parser.add_argument("--target_gib", type=float, default=2.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        Path(work, "large.py").write_text(SPEC.format(elements=args.elements))
        Path(work, "floor.py").write_text(FLOOR.format(elements=args.elements))
        report = Path(work, "report.json")
        app_s, app_kib = _run_measured([sys.executable, "-m", "compat.apps.check", "--specs=large.py:LARGE",
                                        "--format=json", f"--output={report}"], work)
        report_bytes = report.stat().st_size
        floor_s, floor_kib = _run_measured([sys.executable, "floor.py"], work)
    target_kib = args.target_gib * 1024 * 1024
    print(f"{'':<10} {'wall s':>8} {'peak RSS MiB':>13}")
    print(f"{'app':<10} {app_s:>8.1f} {app_kib / 1024:>13.0f}")
    print(f"{'floor':<10} {floor_s:>8.1f} {floor_kib / 1024:>13.0f}")
    print(f"ratio app/floor peak RSS: {app_kib / floor_kib:.2f}; JSON report {report_bytes / 1e6:.2f} MB "
          f"for {args.elements:,} elements")
    passed = app_kib <= target_kib
    print(f"{'PASS' if passed else 'MISS'}: app peak RSS {app_kib / 1024 / 1024:.2f} GiB, target <= {args.target_gib} GiB")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
