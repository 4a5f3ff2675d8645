"""The guide's generator is a project tool (tools/guide), not in the installed package: import it from this checkout
(`pytest` started as a console script has no checkout on sys.path; `python -m pytest` and Bazel do)."""

import sys
from pathlib import Path

_CHECKOUT = str(Path(__file__).resolve().parents[2])
if _CHECKOUT not in sys.path:
    sys.path.insert(0, _CHECKOUT)
