"""`# TODO(gradcompat): ...` comments: what the rewriter could not prove safe, and what to do by hand."""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst

PREFIX = "# TODO(gradcompat): "


def leading_lines(statement: cst.CSTNode) -> list[cst.EmptyLine]:
    """The blank and comment lines above a statement (simple or compound)."""
    return list(getattr(statement, "leading_lines", ()))


def todo_comment(reason: str) -> str:
    """One comment line (newlines folded) for `reason`."""
    return PREFIX + " ".join(reason.split())


def with_todos(statement: cst.BaseStatement, comments: Sequence[str],
               above: Sequence[cst.EmptyLine] = ()) -> cst.BaseStatement:
    """`statement` with each comment above it, unless an identical comment is already there (idempotence).

    `above`: lines above it that are not its own, e.g. the module header above a module's first statement.
    """
    present = {line.comment.value for line in [*above, *leading_lines(statement)] if line.comment is not None}
    new = [cst.EmptyLine(comment=cst.Comment(c)) for c in comments if c not in present]
    if not new:
        return statement
    return statement.with_changes(leading_lines=[*leading_lines(statement), *new])
