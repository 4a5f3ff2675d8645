"""Regenerate tests/data/legacy_expected/ from tests/data/legacy/ with compat-rewrite; review every diff by hand.

Usage: PYTHONPATH=. python tools/update_rewrite_goldens.py [NAME...]

The goldens are the rewriter's spec: `git diff tests/data/legacy_expected` after running this is the change in
behaviour to review, and tests/rewrite/test_goldens.py fails until it is accepted.
"""

from __future__ import annotations

import sys
from pathlib import Path

from compat.rewrite import rewrite_source

ROOT = Path(__file__).resolve().parent.parent
LEGACY = ROOT / "tests" / "data" / "legacy"
EXPECTED = ROOT / "tests" / "data" / "legacy_expected"


def main(names: list[str]) -> int:
    EXPECTED.mkdir(exist_ok=True)
    paths = [LEGACY / f"{n}.py" for n in names] if names else sorted(LEGACY.glob("*.py"))
    for path in paths:
        result = rewrite_source(path.read_text(encoding="utf-8"), str(path))
        target = EXPECTED / path.name
        old = target.read_text(encoding="utf-8") if target.exists() else None
        if old != result.text:
            target.write_text(result.text, encoding="utf-8")
        todo = sum(1 for s in result.sites if s.outcome == "todo")
        print(f"{'updated' if old != result.text else 'same   '} {target.relative_to(ROOT)}: "
              f"{len(result.sites)} sites, {todo} TODO")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
