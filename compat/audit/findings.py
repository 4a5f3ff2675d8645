"""What the audit reports: one `Finding` per problem, one `FileResult` per scanned file."""

from __future__ import annotations

import dataclasses
import enum
import os


class Severity(enum.StrEnum):
    """How urgent a finding is; the values are SARIF result levels."""

    ERROR = "error"
    WARNING = "warning"
    NOTE = "note"


@dataclasses.dataclass(frozen=True, order=True)
class Finding:
    """One problem at one place in one file.

    Attributes:
      path: the file as given on the command line (or found under a given directory), `/`-separated.
      line, col: 1-based start of the offending expression (SARIF convention; `col` counts characters).
      end_line: 1-based last line of the expression.
      rule: stable rule id, e.g. `GC003` (see `compat.audit.RULES`).
      severity: `Severity` value as a string.
      message: what is wrong, naming the user's thing.
      suggestion: the concrete TF2 shape of the code and what to check with `compat-check`.
    """

    path: str
    line: int
    col: int
    rule: str
    end_line: int
    severity: str
    message: str
    suggestion: str = ""

    def as_dict(self) -> dict[str, object]:
        """JSON-ready: `path` is valid UTF-8 text; a name that is not adds `path_bytes_hex`, its exact bytes."""
        return {**dataclasses.asdict(self), **path_fields(self.path)}


def display_path(path: str) -> str:
    """`path` as valid UTF-8 text: bytes of a file name that are not UTF-8 show as `\\xNN` (never a crash).

    Paths come from the file system as `str` with such bytes smuggled in as surrogates (PEP 383), which
    no encoder accepts; reports use this form, plus the exact bytes where a format can carry them.
    """
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return os.fsencode(path).decode("utf-8", "backslashreplace")
    return path


def path_fields(path: str) -> dict[str, str]:
    """JSON fields for a file name: `path` as `display_path` shows it, plus `path_bytes_hex` (the exact bytes of
    the name) when it is not UTF-8, so a report stays valid JSON and still names the file exactly."""
    shown = display_path(path)
    return {"path": shown} if shown == path else {"path": shown, "path_bytes_hex": os.fsencode(path).hex()}


@dataclasses.dataclass(frozen=True)
class Site:
    """A named thing at a place: a registered gradient name, or an override-map value that points at one.

    `branches` lists the exclusive arms (see `compat.audit.branches`) the place is in, so that two
    registrations in the if and else arms of one statement are not reported as duplicates.
    """

    name: str
    path: str
    line: int
    col: int
    end_line: int
    branches: tuple[tuple[int, int, int], ...] = ()


@dataclasses.dataclass(frozen=True)
class FileResult:
    """Everything one file contributes; tree-wide rules (GC007 notes, GC008) combine these afterwards.

    Attributes:
      path: the file, as in `Finding.path`.
      lines: number of lines read (0 when unreadable).
      parsed: whether the file was parsed with `ast` (False when the pre-filter skipped it or it failed).
      findings: per-file findings, GC000 included.
      registrations: gradient names this file registers with a literal `RegisterGradient("Name")`.
      override_targets: literal values of `gradient_override_map` entries (registered gradient names).
      runtime_targets: literal values of `compat.gradient_override_map` entries (gradcompat's TF2 form of a map).
      loads_op_library: the file calls `tf.load_op_library`: its registrations may name the custom ops it loads.
    """

    path: str
    lines: int = 0
    parsed: bool = False
    findings: tuple[Finding, ...] = ()
    registrations: tuple[Site, ...] = ()
    override_targets: tuple[Site, ...] = ()
    runtime_targets: tuple[Site, ...] = ()
    loads_op_library: bool = False

    @property
    def unreadable(self) -> bool:
        return any(f.rule == "GC000" for f in self.findings)
