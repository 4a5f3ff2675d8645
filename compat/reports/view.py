"""How much of a check report the text formats show: the whole report, only what was received, or a CI digest."""

from __future__ import annotations

import dataclasses
from typing import Literal

Show = Literal["all", "upstream"]


@dataclasses.dataclass(frozen=True)
class View:
    """Options of the table and markdown reports (JSON is always whole; HTML has its own filters).

    Attributes:
      show: `all`, or `upstream` for only "What your gradient function received".
      only_differences: leave out matrix rows, specs and received scenes where every variant agrees.
      quiet: only the verdict and the unexpected cells (for CI logs).
      summary: the table format's one-screen answer (compat-check's default on the terminal) instead of every
        section; markdown ignores it.
    """

    show: Show = "all"
    only_differences: bool = False
    quiet: bool = False
    summary: bool = False


FULL = View()
