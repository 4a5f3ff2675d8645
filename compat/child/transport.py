"""An exception raised in a child, carried to the parent as plain data: its type's name, message and traceback."""

from __future__ import annotations

import dataclasses
import traceback


@dataclasses.dataclass(frozen=True)
class RaisedInChild:
    """What the parent knows of an exception raised in a child (picklable, JSON-able through `as_dict`)."""

    type: str
    message: str
    traceback: str = ""

    @classmethod
    def of(cls, exc: BaseException) -> RaisedInChild:
        """`exc` described, with the traceback Python would print for it."""
        return cls(type(exc).__name__, str(exc), "".join(traceback.format_exception(exc)))

    @property
    def line(self) -> str:
        """The last line Python prints for it: `ValueError: boom`, `KeyboardInterrupt`, `SystemExit: 3`."""
        return f"{self.type}: {self.message}" if self.message else self.type

    def as_dict(self) -> dict[str, str]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, str]) -> RaisedInChild:
        return cls(data["type"], data["message"], data.get("traceback", ""))


def exception_line(exc: BaseException) -> str:
    """The last line of the traceback Python would print for `exc` (`ValueError: boom`)."""
    return "".join(traceback.format_exception_only(exc)).strip().splitlines()[-1]
