"""The edits the pattern analyses decide on, keyed by the original CST nodes; `apply.py` carries them out."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

import libcst as cst

from compat.rewrite.result import Site
from compat.rewrite.todo import todo_comment

StatementBuilder = Callable[[cst.CSTNode], Sequence[cst.BaseStatement]]


@dataclasses.dataclass(frozen=True)
class CallEdit:
    """Replace an op call by `function(<its tensor arguments>)`; `tensor_args` are positions or keywords."""

    function: str
    tensor_args: tuple[int | str, ...]


@dataclasses.dataclass
class Plan:
    """Everything one rewrite will change, built by the analyses and read by `ApplyPlan`.

    Attributes:
      calls: id(Call) -> the helper call replacing it.
      unwraps: id(With) -> indices of the `gradient_override_map` items to drop (all: the block is dissolved).
      statements: id(statement) -> builder of its replacement from the updated node ([] removes it).
      hoists: id(statement) -> id(enclosing If): the replacement moves out, just before the If.
      todos: id(statement) -> TODO comments to put above it.
      helpers: module-level definitions inserted after the imports.
      graph_handles: names of `G = tf.get_default_graph()` handles used by rewritten maps (removed if now unused).
      key_names: names of gradient-name variables used by rewritten registrations (removed if now unused).
      tf_alias: the name to write `tf.custom_gradient` with; `import tensorflow as tf` is added if it is unbound.
      compat_alias: the name gradcompat's runtime helpers are written with (`import compat [as ...]` is added), if
        any is used.
      sites: every legacy site found, rewritten, kept or TODO.
    """

    tf_alias: str
    add_tf_import: bool = False
    compat_alias: str | None = None
    calls: dict[int, CallEdit] = dataclasses.field(default_factory=dict)
    unwraps: dict[int, frozenset[int]] = dataclasses.field(default_factory=dict)
    statements: dict[int, StatementBuilder] = dataclasses.field(default_factory=dict)
    hoists: dict[int, int] = dataclasses.field(default_factory=dict)
    todos: dict[int, list[str]] = dataclasses.field(default_factory=dict)
    helpers: list[cst.BaseStatement] = dataclasses.field(default_factory=list)
    helper_names: dict[tuple[object, ...], str] = dataclasses.field(default_factory=dict)
    graph_handles: set[str] = dataclasses.field(default_factory=set)
    key_names: set[str] = dataclasses.field(default_factory=set)
    sites: list[Site] = dataclasses.field(default_factory=list)

    def todo(self, statement: cst.CSTNode, line: int, pattern: str, reason: str) -> None:
        """Leave `statement` as is, with a TODO comment above it, and report the site."""
        comments = self.todos.setdefault(id(statement), [])
        comment = todo_comment(reason)
        if comment not in comments:
            comments.append(comment)
        self.sites.append(Site(line, pattern, "todo", reason))

    def rewritten(self, line: int, pattern: str, what: str) -> None:
        self.sites.append(Site(line, pattern, "rewritten", what))

    def kept(self, line: int, pattern: str, reason: str) -> None:
        """Leave the site as it is, without a comment: it is valid TF2 (`reason` says why)."""
        self.sites.append(Site(line, pattern, "kept", reason))

    def replace(self, statement: cst.CSTNode, builder: StatementBuilder) -> None:
        self.statements[id(statement)] = builder

    def remove(self, statement: cst.CSTNode) -> None:
        self.statements[id(statement)] = lambda _node: []

    @property
    def changes(self) -> bool:
        return bool(self.calls or self.unwraps or self.statements or self.todos or self.helpers)
