"""Library errors said as a command line says them: with the flag that held the value (standard library only)."""

from __future__ import annotations

from compat.errors import Error
from compat.releases.shards import MissingShard


def flag_message(exc: BaseException) -> str:
    """The message of a library error as a command line says it: the argument at fault becomes its flag
    (`dtypes: unknown dtype(s)` -> `--dtypes: unknown dtype(s)`; the flags are named as the parameters are), a
    missing shard says the command line that makes it; any other error as it is."""
    if isinstance(exc, Error) and exc.argument:
        return exc.for_flag(f"--{exc.argument}")
    if isinstance(exc, MissingShard):
        return (f"{exc.what()}: run `{exc.command} --shard={exc.index}/{exc.count} --format=json` with the same "
                "flags and pass its report too")
    return str(exc)
