"""`compat.Error`: the base of every error gradcompat raises about its user's input (a spec, a name, a file)."""

from __future__ import annotations


class Error(Exception):
    """A user-facing error: the message names the spec, file, argument or name at fault and how to fix it.

    Catch `compat.Error` to handle every such error at once; library bugs and TensorFlow's own errors are not
    subclasses. Subclasses keep the built-in class they always were (e.g. `SpecError` is also a ValueError).
    """


class UnknownNameError(Error, ValueError):
    """A registered name (mechanism, context, variant, scenario, reference, dtype, spec) that does not exist."""


__all__ = ["Error", "UnknownNameError"]
