"""Benchmark: what the references that are the forward itself (autodiff, finite_difference) add to a check.

Run: `python benchmarks/references.py [--specs=sign_ste,...] [--target=0.30]`.

In one process, for each catalogue spec (default: the whole default catalogue) in float32, every scenario and
default variant: (a) `compat.check([spec], references=[])`, the run without references; (b) the references on the
same cells: each reference computed once per scenario (`compat.references.compute`) and every cell compared with
it (`check_cell`), as `compat.check` does by default. Both are timed in the same process under the same load (the
load average is printed). The target: (b) / (a) <= --target over the catalogue (issue #26: the default run may
grow by at most 30%). Exit code 0 when it is met, 1 when it is missed.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from absl import app, flags  # noqa: E402

from compat.catalogue import CATALOGUE  # noqa: E402

_SPECS = flags.DEFINE_list("specs", None, "Catalogue specs to time (default: the default catalogue).")
_TARGET = flags.DEFINE_float("target", 0.30, "The largest allowed (references time) / (check time without them).")


def _time_spec(name: str) -> tuple[float, float, int]:
    """(seconds of the check without references, seconds of the references on its cells, cells)."""
    from compat.checker import check
    from compat.references import DEFAULT_REFERENCES, compute
    from compat.references.base import check_cell
    from compat.scenarios import SCENARIOS

    spec = CATALOGUE[name]()
    start = time.perf_counter()
    report = check([spec], references=[])
    checked = time.perf_counter() - start
    start = time.perf_counter()
    for scenario in report.scenarios:
        downstream = SCENARIOS[scenario].downstream(spec)
        values = [compute(reference, spec, downstream, "float32") for reference in DEFAULT_REFERENCES]
        for cell in report.cells:
            if cell.scenario == scenario:
                for value in values:
                    check_cell(value, cell.result, cell.result.compute_dtype or "float32")
    return checked, time.perf_counter() - start, len(report.cells)


def main(argv: list[str]) -> int:
    del argv
    names = _SPECS.value or list(CATALOGUE)
    total_check = total_references = 0.0
    for name in names:
        checked, referenced, cells = _time_spec(name)
        total_check += checked
        total_references += referenced
        print(f"{name}: check without references {checked:.2f} s ({cells} cells), references {referenced:.2f} s "
              f"({referenced / checked:.1%}); load average {os.getloadavg()[0]:.2f}", flush=True)
    ratio = total_references / total_check
    met = ratio <= _TARGET.value
    print(f"total: check without references {total_check:.1f} s, references {total_references:.1f} s: "
          f"{ratio:.1%} of the run (target <= {_TARGET.value:.0%}): {'met' if met else 'MISSED'}")
    return 0 if met else 1


if __name__ == "__main__":
    app.run(lambda argv: sys.exit(main(argv)))
