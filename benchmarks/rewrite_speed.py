"""Benchmark: compat-rewrite on synthetic legacy modules of growing size, against LibCST's own floor.

Run: `python benchmarks/rewrite_speed.py [--sizes=30,100,250,1000] [--repeats=3] [--real=FILE,...] [--diff]`.

Each module is generated deterministically (`legacy_module`): units of realistic legacy code, each with a
`RegisterGradient` function and the `gradient_override_map` block using it, a built-in `"Identity"` override,
a per-call gradient-reversal registration (tf-dann's FlipGradientBuilder), `Defun(grad_func=...)`,
`Defun(python_grad_func=...)`, a `Defun` with `shape_func`, a `Defun` called with `name=` (left as a TODO) and
plain model code (a layer class, a numpy initialiser), until the module reaches the size. For each size,
alternating which runs first:
- *app*: `compat-rewrite --format=json FILE` in a child process (`_measure`: wall and CPU seconds, peak RSS);
  with `--diff`, `compat-rewrite FILE`, whose default output is a unified diff of the file;
- *floor*: a child process that only reads the file, parses it with LibCST and resolves, once, the metadata the
  rewrite uses (`MetadataWrapper(..., unsafe_skip_copy=True).resolve_many([PositionProvider, ScopeProvider])`;
  the rewrite takes parents from its positions pass): what any LibCST codemod of that file costs at least.
Both start a Python interpreter; each one's start-up (on a one-line file, measured alongside) is subtracted for the
seconds per 100 KB. `--real` adds files measured the same way but not judged (default: the installed TensorFlow's
`python/ops/math_grad.py`, 72 KB of real gradient code).

Targets (median of the repeats; `--judged-from`, `--time-target`, `--linearity`, `--rss-ratio`): at every size
of 100 KB or more, <= 1.0 s wall per 100 KB (net of the app's start-up); linear time: the largest module's CPU
seconds per KB (net of start-up) within 1.5x of the ~100 KB module's (CPU time: on a loaded machine the waits
inflate wall time, not the work); bounded memory: the app's peak RSS within 2x the floor's on the same file.
Exit 0 when every target is met, 1 when one is missed, 2 on a usage error. Each line carries the load average:
on a shared machine, rerun when it is above the CPUs.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _measure import Measured, load_average, measure  # noqa: E402

HEADER = '''"""Synthetic legacy module: custom gradients the TF1 way, with plain model code around them."""

import numpy as np
import tensorflow as tf
from tensorflow.python.framework import function
from tensorflow.python.framework import ops
'''

UNIT = '''

# -- unit {i} --
SCALE_{i} = {scale}


@tf.RegisterGradient("ClipGrad{i}")
def _clip_grad_{i}(op, grad):
    x = op.inputs[0]
    # Straight-through, but only where |x| <= 1.
    return tf.clip_by_value(grad, -1.0, 1.0) * tf.cast(tf.abs(x) <= 1.0, grad.dtype)


def binarize_{i}(x):
    """Binarize with a clipped straight-through estimator."""
    G = tf.get_default_graph()
    with G.gradient_override_map({{"Sign": "ClipGrad{i}"}}):
        return tf.sign(x)


def round_ste_{i}(x):
    with tf.get_default_graph().gradient_override_map({{"Round": "Identity"}}):
        y = tf.round(x)
    return y


class FlipGradient{i}(object):
    """Gradient reversal, registered once per call (after pumpikano/tf-dann)."""

    def __init__(self):
        self.num_calls = 0

    def __call__(self, x, l=1.0):
        grad_name = "FlipGradient{i}_%d" % self.num_calls

        @ops.RegisterGradient(grad_name)
        def _flip_gradients_{i}(op, grad):
            return [tf.negative(grad) * l]

        g = tf.get_default_graph()
        with g.gradient_override_map({{"Identity": grad_name}}):
            y = tf.identity(x)

        self.num_calls += 1
        return y


@function.Defun(tf.float32, tf.float32)
def _scale_bprop_{i}(x, dy):
    return dy * SCALE_{i}


@function.Defun(tf.float32, grad_func=_scale_bprop_{i})
def scaled_identity_{i}(x):
    return tf.identity(x)


def _guided_backward_{i}(op, grad):
    x = op.inputs[0]
    return grad * tf.cast(x > 0.0, tf.float32)


@function.Defun(tf.float32, python_grad_func=_guided_backward_{i})
def guided_relu_{i}(x):
    return tf.nn.relu(x)


@function.Defun(tf.float32, shape_func=lambda op: [op.inputs[0].get_shape()], python_grad_func=lambda op, dy: dy)
def shaped_identity_{i}(x):
    return tf.identity(x)


def _scale_gradient_backward_{i}(unused_op, grad):
    return grad * SCALE_{i}


@function.Defun(tf.float32, python_grad_func=_scale_gradient_backward_{i}, func_name="ScaleGradient{i}")
def scale_gradient_forward_{i}(x):
    return x


def scale_gradient_{i}(x, name="scale_gradient_{i}"):
    return scale_gradient_forward_{i}(x, name=name)


class Block{i}(object):
    """A layer made of the ops above, as model code calls them."""

    def __init__(self, units={units}, name="block_{i}"):
        self.units = units
        self.name = name
        self.scale = 1.0 / (units + 1)
        self.flip = FlipGradient{i}()
        self.history = []

    def __call__(self, x, training=True):
        h = binarize_{i}(x) * self.scale
        h = round_ste_{i}(h) + scaled_identity_{i}(h)
        if training:
            self.history.append(h)
            h = self.flip(h, l=0.5)
        h = shaped_identity_{i}(guided_relu_{i}(h))
        return h - tf.reduce_mean(h, axis=-1, keepdims=True)

    def describe(self):
        parts = [self.name, str(self.units), "%.4f" % self.scale]
        return ", ".join(p for p in parts if p)


def init_weights_{i}(shape, seed={i}):
    rng = np.random.RandomState(seed)
    weights = rng.normal(0.0, 1.0 / np.sqrt(shape[0]), size=shape).astype(np.float32)
    return {{"kernel": weights, "bias": np.zeros(shape[-1], np.float32)}}
'''


def unit(i: int) -> str:
    """The `i`th unit of legacy code: its names all end in `_{i}`, so units never collide."""
    return UNIT.format(i=i, scale=f"0.{i % 9 + 1}", units=16 + i % 48)


def legacy_module(size: int) -> str:
    """A legacy module of at least `size` bytes: the header, then units 0, 1, ... (the same text every time)."""
    parts, total = [HEADER], len(HEADER)
    while total < size:
        parts.append(unit(len(parts) - 1))
        total += len(parts[-1])
    return "".join(parts)


_FLOOR = """
import sys
import libcst as cst
import libcst.metadata as meta
with open(sys.argv[1], encoding="utf-8") as f:
    source = f.read()
wrapper = meta.MetadataWrapper(cst.parse_module(source), unsafe_skip_copy=True)
wrapper.resolve_many([meta.PositionProvider, meta.ScopeProvider])
"""


def run_app(path: Path, diff: bool = False) -> tuple[Measured, dict]:
    """`compat-rewrite --format=json` (or, with `diff`, the default unified diff) on `path`: the measured run and
    its JSON summary (empty with `diff`)."""
    measured = measure([sys.executable, "-m", "compat.apps.rewrite", "--format=text" if diff else "--format=json",
                        str(path)], env={**os.environ, "PYTHONPATH": str(_ROOT)})
    if measured.returncode not in (0, 1, 4):  # 1: changes proposed; 4: some sites left TODO (once main has it)
        sys.exit(f"compat-rewrite failed (exit {measured.returncode}) on {path}:\n{measured.stderr[-2000:]}")
    return measured, {} if diff else json.loads(measured.stdout)


def run_floor(path: Path) -> Measured:
    measured = measure([sys.executable, "-c", _FLOOR, str(path)])
    if measured.returncode != 0:
        sys.exit(f"the floor failed on {path}:\n{measured.stderr[-2000:]}")
    return measured


def _sites(report: dict) -> tuple[int, int]:
    """(rewritten, TODO) sites in a compat-rewrite JSON report."""
    sites = [s for f in report.get("files", []) for s in f.get("sites", [])]
    return (sum(s.get("outcome") == "rewritten" for s in sites), sum(s.get("outcome") == "todo" for s in sites))



def _default_real() -> list[str]:
    spec = importlib.util.find_spec("tensorflow")  # locates the package without importing it
    if spec is None or not spec.submodule_search_locations:
        return []
    path = Path(list(spec.submodule_search_locations)[0]) / "python" / "ops" / "math_grad.py"
    return [str(path)] if path.is_file() else []


@dataclasses.dataclass
class Case:
    """One file, measured `repeats` times: the app and the floor, alternating which runs first."""

    label: str
    path: Path
    judged: bool
    diff: bool = False
    apps: list[Measured] = dataclasses.field(default_factory=list)
    floors: list[Measured] = dataclasses.field(default_factory=list)
    summary: dict = dataclasses.field(default_factory=dict)

    @property
    def kb(self) -> float:
        return self.path.stat().st_size / 1000

    def run(self, app_first: bool) -> None:
        if not app_first:
            self.floors.append(run_floor(self.path))
        app, report = run_app(self.path, self.diff)
        self.apps.append(app)
        self.summary = report.get("summary", {})
        if app_first:
            self.floors.append(run_floor(self.path))

    def median(self, side: str, what: str) -> float:
        """The median `what` (`seconds`, `cpu_seconds`, `largest_rss_mib`) of the `side` ("apps", "floors")."""
        return statistics.median(getattr(m, what) for m in getattr(self, side))

    def per_100kb(self, start: Case, side: str, what: str) -> float:
        """Seconds per 100 KB of `side`, net of its start-up (`start`'s median)."""
        return (self.median(side, what) - start.median(side, what)) / self.kb * 100


def _report(case: Case, start: Case) -> None:
    if case is start:
        print(f"{case.label}: compat-rewrite median of {len(case.apps)} {case.median('apps', 'seconds'):.2f} s wall, "
              f"{case.median('apps', 'cpu_seconds'):.2f} s CPU, {case.median('apps', 'largest_rss_mib'):.0f} MiB; "
              f"floor {case.median('floors', 'seconds'):.2f} s wall, {case.median('floors', 'cpu_seconds'):.2f} s "
              f"CPU, {case.median('floors', 'largest_rss_mib'):.0f} MiB; {load_average()}", flush=True)
        return
    app, floor = case.median("apps", "seconds"), case.median("floors", "seconds")
    app_rss, floor_rss = case.median("apps", "largest_rss_mib"), case.median("floors", "largest_rss_mib")
    sites = f"{case.summary.get('sites_rewritten', '?')} sites rewritten, {case.summary.get('sites_todo', '?')} TODO"
    print(f"{case.label}: {case.kb:,.0f} KB, {sites}; compat-rewrite median of {len(case.apps)} {app:.2f} s wall "
          f"(best {min(m.seconds for m in case.apps):.2f}), {case.median('apps', 'cpu_seconds'):.2f} s CPU, "
          f"{app_rss:.0f} MiB peak RSS; floor {floor:.2f} s wall, {case.median('floors', 'cpu_seconds'):.2f} s CPU, "
          f"{floor_rss:.0f} MiB; app/floor {app / floor:.2f}x wall, {app_rss / floor_rss:.2f}x RSS; per 100 KB net "
          f"of start-up: app {case.per_100kb(start, 'apps', 'seconds'):.2f} s wall "
          f"({case.per_100kb(start, 'apps', 'cpu_seconds'):.2f} CPU), floor "
          f"{case.per_100kb(start, 'floors', 'seconds'):.2f} s wall; {load_average()}", flush=True)


def _judge(cases: list[Case], start: Case, args: argparse.Namespace) -> list[str]:
    """The missed targets among the judged cases."""
    missed: list[str] = []
    judged = [c for c in cases if c.judged]
    for case in judged:
        wall = case.per_100kb(start, "apps", "seconds")
        if wall > args.time_target:
            missed.append(f"{case.label} {wall:.2f} s per 100 KB > {args.time_target}")
        app_rss, floor_rss = case.median("apps", "largest_rss_mib"), case.median("floors", "largest_rss_mib")
        if app_rss > args.rss_ratio * floor_rss:
            missed.append(f"{case.label} peak RSS {app_rss:.0f} MiB > {args.rss_ratio}x the floor's {floor_rss:.0f}")
    if len(judged) >= 2:
        base = min(judged, key=lambda c: abs(c.kb - 100))
        largest = max(judged, key=lambda c: c.kb)
        # CPU seconds: the work done, which a loaded machine's waits do not inflate as they do wall time.
        rates = [c.per_100kb(start, "apps", "cpu_seconds") for c in (base, largest)]
        growth = rates[1] / rates[0] if rates[0] > 0 else float("inf")
        print(f"linearity: CPU seconds per KB of the {largest.label} are {growth:.2f}x those of the {base.label} "
              f"(target <= {args.linearity}x)")
        if largest is not base and growth > args.linearity:
            missed.append(f"CPU time per KB grows {growth:.2f}x from the {base.label} to the {largest.label}")
    return missed


def _parse_sizes(text: str, parser: argparse.ArgumentParser) -> list[int]:
    try:
        sizes = sorted({int(s) for s in text.split(",") if s.strip()})
    except ValueError:
        parser.error(f"--sizes={text}: give comma-separated sizes in KB, e.g. --sizes=30,100,250,1000")
    if not sizes or min(sizes) < 1:
        parser.error(f"--sizes={text}: every size must be at least 1 KB")
    return sizes


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="30,100,250,1000", help="module sizes in KB (1 KB = 1,000 bytes)")
    parser.add_argument("--repeats", type=int, default=3, help="runs of each side per size; the median is judged")
    parser.add_argument("--real", default=None, help="comma-separated real files, measured but not judged "
                        "(default: the installed TensorFlow's python/ops/math_grad.py; '' for none)")
    parser.add_argument("--judged-from", type=int, default=100, help="sizes (KB) from which the targets apply")
    parser.add_argument("--time-target", type=float, default=1.0, help="max seconds per 100 KB (net of start-up)")
    parser.add_argument("--linearity", type=float, default=1.5, help="max ratio of seconds per KB, largest / ~100 KB")
    parser.add_argument("--rss-ratio", type=float, default=2.0, help="max app peak RSS / floor peak RSS")
    parser.add_argument("--diff", action="store_true", help="time compat-rewrite's default output, the unified "
                        "diff, instead of --format=json")
    args = parser.parse_args()
    sizes = _parse_sizes(args.sizes, parser)
    if args.repeats < 1:
        parser.error(f"--repeats={args.repeats}: give at least 1")
    real = _default_real() if args.real is None else [p for p in args.real.split(",") if p]
    for path in real:
        if not os.path.isfile(path):
            parser.error(f"--real: {path} is not a file")
    output = "the default unified diff" if args.diff else "--format=json"
    print(f"sizes {sizes} KB, {args.repeats} repeats, compat-rewrite {output}; {load_average()}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        start = Case("start-up (a one-line file)", Path(tmp) / "tiny.py", judged=False)
        start.path.write_text("x = 1\n")
        cases = [start]
        for kb in sizes:
            path = Path(tmp) / f"legacy_{kb}k.py"
            path.write_text(legacy_module(kb * 1000), encoding="utf-8")
            cases.append(Case(f"{kb} KB module", path, judged=kb >= args.judged_from, diff=args.diff))
        cases += [Case(Path(p).name, Path(p), judged=False, diff=args.diff) for p in real]
        for repeat in range(args.repeats):
            for case in cases:
                case.run(app_first=repeat % 2 == 0)
        for case in cases:
            _report(case, start)
        missed = _judge(cases[1:], start, args)
    print(f"targets (modules of {args.judged_from} KB or more): <= {args.time_target} s wall per 100 KB, CPU time "
          f"per KB of the largest <= {args.linearity}x the ~100 KB one's, peak RSS <= {args.rss_ratio}x the floor's: "
          f"{'MISS: ' + '; '.join(missed) if missed else 'PASS'}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
