"""How gradcompat describes an exception in a message: one place, TensorFlow-free."""

from __future__ import annotations

import re

from compat._exit_guard import ExitCalled

MESSAGE_LIMIT = 400
"""Characters of TensorFlow's message a cell quotes (`tensorflow_message`)."""

_RAISED = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception): ")
_NODE_DEF_LINE = re.compile(r'^([a-z_]+ \{|\}|[a-z_]+: ("[^"]*"|[\w.-]+))$')
"""A line of a NodeDef that TensorFlow prints inside a message (`op: "Sign"`, `attr {`, `}`): left out, so the
sentence after it (`... do not match num inputs 1`) is kept."""


def describe_exception(exc: BaseException) -> str:
    """`TypeName: message`, as a cell names what user code raised; an exit user code asked for says so."""
    if isinstance(exc, SystemExit):
        return f"SystemExit({exc.code!r}) (user code called sys.exit)"
    if isinstance(exc, ExitCalled):
        return str(exc)
    return f"{type(exc).__name__}: {exc}"


def tensorflow_message(error: BaseException) -> str:
    """`TypeName: message` with TensorFlow's own message, without the Python stack it embeds for graph execution
    errors (and autograph's `in user code:` wrapper), its first three lines at most `MESSAGE_LIMIT` characters."""
    text = getattr(error, "message", None) or str(error) or repr(error)
    lines = [line.strip() for line in text.strip().splitlines()]
    if lines and lines[0] == "in user code:":  # autograph's wrapper (tf.keras 2 train steps): the error is last
        raised = [index for index, line in enumerate(lines) if _RAISED.match(line)]
        lines = lines[raised[-1]:] if raised else lines
        lines[0] = lines[0].removeprefix(f"{type(error).__name__}: ")
    # Before 2.15 a graph execution error quotes the Python stack where the op was defined: `File "..."` lines,
    # each followed by its source line, then `Node: 'Lgamma'`.
    kept = [line for index, line in enumerate(lines)
            if line and not line.startswith(("File \"", "Detected at node", "[[{{node", "Node: '"))
            and not (index and (_NODE_DEF_LINE.match(line) or lines[index - 1].startswith("File \"")))]
    first = " ".join(kept[:3])
    if len(first) > MESSAGE_LIMIT:
        first = first[: MESSAGE_LIMIT - 3] + "..."
    return f"{type(error).__name__}: {first}"


def first_line(error: BaseException | None, limit: int | None = None) -> str:
    """The first non-blank line of `error`'s message (the last, the error itself, under autograph's
    `in user code:` wrapper), stripped, at most `limit` characters; "" for no message."""
    lines = [line.strip() for line in str(error).strip().splitlines() if line.strip()]
    line = (lines[-1] if lines[0].endswith("in user code:") else lines[0]) if lines else ""
    return line if limit is None else line[:limit]
