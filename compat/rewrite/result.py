"""What a rewrite returns: one `Site` per legacy pattern found, one `FileResult` per file (results are values)."""

from __future__ import annotations

import dataclasses
from typing import Literal

from compat.audit.findings import path_fields

Outcome = Literal["rewritten", "kept", "todo", "skipped"]
OUTCOMES: tuple[Outcome, ...] = ("rewritten", "kept", "todo", "skipped")
DONE: tuple[Outcome, ...] = ("rewritten", "kept")  # outcomes that leave valid TF2 code
Status = Literal["rewritten", "todo", "unchanged", "skipped", "failed"]
STATUSES: tuple[Status, ...] = ("rewritten", "todo", "unchanged", "skipped", "failed")

# Site patterns, named after the audit rules that find them.
PATTERNS = {
    "defun_grad_func": "GC001",
    "defun_python_grad_func": "GC002",
    "register_gradient": "GC003",
    "override_map": "GC004",
}


@dataclasses.dataclass(frozen=True, order=True)
class Site:
    """One legacy pattern at one place.

    Attributes:
      line: 1-based line of the legacy call (the same line `compat-audit` reports).
      pattern: a key of `PATTERNS`.
      outcome: `rewritten`, or `kept` when it is valid TF2 as it is and left unchanged (a RegisterGradient of a
        real op type no override map uses), or `todo` when it was left as is with a `# TODO(gradcompat): ...`
        comment, or `skipped` when its file was skipped (nothing written: see the file's reason).
      reason: for `todo`, why and what to do by hand; for `kept`, why it is valid TF2; for `rewritten`, what it
        became.
    """

    line: int
    pattern: str
    outcome: Outcome
    reason: str = ""

    def as_dict(self) -> dict[str, object]:
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class SourceResult:
    """The rewrite of one module's text: the new text (equal to the old one when nothing changed) and its sites."""

    text: str
    sites: tuple[Site, ...] = ()

    @property
    def todo(self) -> tuple[Site, ...]:
        return tuple(s for s in self.sites if s.outcome == "todo")


@dataclasses.dataclass(frozen=True)
class FileResult:
    """One file's result, like LibCST's TransformSuccess / TransformSkip / TransformFailure.

    Attributes:
      path: the file as given (or found under a given directory).
      status: `rewritten` (code changes proposed or written), `todo` (the only change is `# TODO(gradcompat)`
        comments added), `unchanged` (nothing to write; its sites may still be TODOs marked by an earlier run),
        `skipped` (not a regular file, too large, read-only, changed while being rewritten, ...) or `failed`
        (unreadable, undecodable, unparsable).
      reason: why, for `skipped` and `failed`.
      sites: the legacy patterns found, rewritten or left with a TODO; all `skipped` when the file was skipped
        (a skipped file has nothing rewritten, whoever skipped it).
      original, rewritten: the text before and after (empty when skipped or failed).
      written: whether `--in-place` wrote the file.
    """

    path: str
    status: Status
    reason: str = ""
    sites: tuple[Site, ...] = ()
    original: str = dataclasses.field(default="", repr=False)
    rewritten: str = dataclasses.field(default="", repr=False)
    written: bool = False

    def __post_init__(self) -> None:
        if self.status in ("skipped", "failed") and any(s.outcome != "skipped" for s in self.sites):
            object.__setattr__(self, "sites", tuple(dataclasses.replace(s, outcome="skipped") for s in self.sites))

    def as_dict(self) -> dict[str, object]:
        """JSON-ready; a file name that is not UTF-8 adds `path_bytes_hex` (as compat-audit's JSON does)."""
        return {
            **path_fields(self.path),
            "status": self.status,
            "reason": self.reason,
            "written": self.written,
            "sites": [s.as_dict() for s in self.sites],
        }
