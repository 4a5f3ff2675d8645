"""Benchmark: `compat-check` on a 2,000,000-element input with a JSON report, peak memory against a floor.

Run: `python benchmarks/large_input.py [--elements=2000000] [--target_gib=2]`.

(a) *app*: `compat-check --specs=<a sign straight-through estimator on N float32 elements> --format=json
    --output=FILE` in a child process: every scenario and variant, the default array summaries.
(b) *floor*: a child process that imports TensorFlow and takes one `tf.custom_gradient` gradient of the same
    input eagerly: what any process touching that input costs.

Both children's peak RSS (from wait4, each started by `_measure`'s launcher) are measured in the same run and
printed with their ratio, with the app's wall time and report size. Exit 0 when the app's peak RSS is within the
target (2 GiB), 1 otherwise.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import textwrap
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _measure import measure  # noqa: E402

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


def _run_measured(command: list[str], cwd: str) -> tuple[float, float]:
    """Wall seconds and peak RSS (MiB, from wait4) of `command`, started by `_measure`'s launcher so that neither
    this process's memory nor the other measured command's counts in its peak."""
    measured = measure(command, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}, cwd=cwd)
    if measured.returncode not in (0, 1):
        sys.exit(f"{' '.join(command)} failed with exit code {measured.returncode}:\n{measured.stderr[-2000:]}")
    return measured.seconds, measured.largest_rss_mib


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--elements", type=int, default=2_000_000)
    parser.add_argument("--target_gib", type=float, default=2.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        Path(work, "large.py").write_text(SPEC.format(elements=args.elements))
        Path(work, "floor.py").write_text(FLOOR.format(elements=args.elements))
        report = Path(work, "report.json")
        app_s, app_mib = _run_measured([sys.executable, "-m", "compat.apps.check", "--specs=large.py:LARGE",
                                        "--format=json", f"--output={report}"], work)
        report_bytes = report.stat().st_size
        floor_s, floor_mib = _run_measured([sys.executable, "floor.py"], work)
    print(f"{'':<10} {'wall s':>8} {'peak RSS MiB':>13}")
    print(f"{'app':<10} {app_s:>8.1f} {app_mib:>13.0f}")
    print(f"{'floor':<10} {floor_s:>8.1f} {floor_mib:>13.0f}")
    print(f"ratio app/floor peak RSS: {app_mib / floor_mib:.2f}; JSON report {report_bytes / 1e6:.2f} MB "
          f"for {args.elements:,} elements")
    passed = app_mib <= args.target_gib * 1024
    print(f"{'PASS' if passed else 'MISS'}: app peak RSS {app_mib / 1024:.2f} GiB, target <= {args.target_gib} GiB")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
