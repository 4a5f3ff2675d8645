"""Benchmark: what each execution context costs, the catalogue through its four variants, in one process.

Run: `python benchmarks/context_cost.py [--contexts=eager_tape,recompute_grad,...]` (default: every context but the
distributed ones). Each line is one `compat.checker.check` of the whole catalogue (float32, every scenario) with
`--variants='*@<context>'` (the reference variant runs too, the same for every line), with wall and CPU seconds of
this process and the load average: CPU seconds are what to compare on a shared machine. This is how the issue #26
contexts were sorted into default and opt-in (a context costing several times a tape's CPU is opt-in).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from absl import app, flags  # noqa: E402

_DISTRIBUTED = ("mirrored_tape", "mirrored_v1", "multi_worker")
_CONTEXTS = flags.DEFINE_list("contexts", None, "Contexts to time (default: all but the distributed ones).")


def main(argv: list[str]) -> int:
    del argv
    from compat.catalogue import CATALOGUE
    from compat.checker import check
    from compat.contexts import ALL_CONTEXTS

    contexts = _CONTEXTS.value or [name for name in ALL_CONTEXTS if name not in _DISTRIBUTED]
    specs = [factory() for factory in CATALOGUE.values()]
    check(specs[:1], scenarios=["sum"], variants=["custom_gradient@eager_tape"])  # warm-up: imports, first traces
    for context in contexts:
        wall, cpu = time.perf_counter(), time.process_time()
        report = check(specs, variants=[f"*@{context}"])
        print(f"{context:22s} wall {time.perf_counter() - wall:6.1f} s  CPU {time.process_time() - cpu:6.1f} s  "
              f"cells {len(report.cells)}  unexpected {len(report.unexpected)}  "
              f"load {os.getloadavg()[0]:.1f}", flush=True)
    return 0


if __name__ == "__main__":
    app.run(main)
