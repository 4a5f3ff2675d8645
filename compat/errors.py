"""`compat.Error`: the base of every error gradcompat raises about its user's input (a spec, a name, a file)."""

from __future__ import annotations


class Error(Exception):
    """A user-facing error: the message names the spec, file, argument or name at fault and how to fix it.

    Catch `compat.Error` to handle every such error at once; library bugs and TensorFlow's own errors are not
    subclasses. Subclasses keep the built-in class they always were (e.g. `SpecError` is also a ValueError).

    `argument`: the parameter holding the value at fault, which then begins the message (`entries: ...`), or
    None; a command line names its flag instead (`for_flag`).
    """

    argument: str | None = None

    def for_flag(self, flag: str) -> str:
        """The message with its argument's name replaced by the command line's `flag`."""
        prefix = f"{self.argument}: "
        message = str(self)
        return f"{flag}: {message[len(prefix):]}" if self.argument and message.startswith(prefix) else message


class UnknownNameError(Error, ValueError):
    """A registered name (mechanism, context, variant, scenario, reference, dtype, spec) that does not exist.

    `argument`: the parameter the name was given in, which begins the message (`dtypes: unknown dtype(s) ...`).
    """

    def __init__(self, message: str, argument: str | None = None) -> None:
        super().__init__(message)
        self.argument = argument

    def __reduce__(self) -> tuple[type[UnknownNameError], tuple[str, str | None]]:
        return UnknownNameError, (str(self), self.argument)


__all__ = ["Error", "UnknownNameError"]
