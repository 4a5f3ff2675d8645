"""RegisterGradient of a real op type that no override map uses: valid TF2 as it is, so kept (an audit note)."""

from __future__ import annotations

import ast
import dataclasses
import os
from collections.abc import Iterable, Mapping

from compat.audit import custom_ops
from compat.audit import data as tf_data
from compat.audit.engine import unused_op_type
from compat.audit.findings import FileResult
from compat.audit.visitor import audit_tree


@dataclasses.dataclass(frozen=True)
class TreeFacts:
    """What the files rewritten together say about each other (compat-rewrite over a tree, as the audit sees it).

    Attributes:
      override_targets: gradient names some override map in those files uses (literal map values).
      op_library_paths: the files among them that call tf.load_op_library.
      files: how many files.
      native_ops: op type -> the C++ source of the tree that registers it (`REGISTER_OP`).
    """

    override_targets: frozenset[str] = frozenset()
    op_library_paths: frozenset[str] = frozenset()
    files: int = 0
    native_ops: Mapping[str, str] = dataclasses.field(default_factory=dict)

    @classmethod
    def of(cls, audits: Iterable[FileResult], native_ops: Mapping[str, str] | None = None) -> TreeFacts:
        """The facts of the files whose (per-file) audits are `audits`, in a tree whose C++ sources register
        `native_ops`."""
        audits = list(audits)
        return cls(frozenset(site.name for a in audits for site in a.override_targets),
                   frozenset(a.path for a in audits if a.loads_op_library), len(audits), dict(native_ops or {}))


def audit_source(text: str, path: str) -> tuple[FileResult, ast.Module]:
    """The audit's per-file result for `text` (the source of `path`), and its syntax tree; never imports
    TensorFlow."""
    module = ast.parse(text)
    return audit_tree(path, module, text, tf_data.load(), text.count("\n") + 1), module


def kept_registrations(audit: FileResult, module: ast.Module, tree: TreeFacts | None = None) -> dict[int, str]:
    """Line of each `RegisterGradient("Name")` to keep as it is -> the reason.

    Kept: the gradient of a real op type (a TensorFlow op with no gradient of its own, a custom op a C++ source of
    the tree, or of this file's directory, registers with REGISTER_OP, or one its file, or a module next to it
    that it imports, loads with tf.load_op_library) whose name no override map in this file, nor in `tree`, uses.
    TF2's tapes look gradients up by op type, so the registration works unchanged.
    `module`: the file's syntax tree (`audit.path` is where it is, to find the modules it imports).
    """
    if not audit.registrations:
        return {}
    used = {site.name for site in audit.override_targets}
    libraries = {audit.path} if audit.loads_op_library else set()
    native_ops: dict[str, str] = custom_ops.op_types_beside(audit.path) if os.path.isfile(audit.path) else {}
    if tree is not None:
        used |= tree.override_targets
        libraries |= tree.op_library_paths
        native_ops.update(tree.native_ops)
    loader = None if audit.path in libraries else custom_ops.imported_op_library(audit.path, module)
    if loader is not None:
        libraries.add(audit.path)
    scope = "the files rewritten together" if tree is not None and tree.files > 1 else "this file"
    kept = {}
    for site in audit.registrations:
        kind = unused_op_type(site, used, tf_data.load(), libraries, native_ops)
        if kind is not None and loader is not None and kind.startswith("an op this file"):
            kind = f"an op `{loader}`, which this file imports, loads with tf.load_op_library"
        if kind is not None:
            kept[site.line] = (f"RegisterGradient({site.name!r}) registers the gradient of op type {site.name!r} "
                               f"itself ({kind}), and no gradient_override_map in {scope} uses it: valid TF2 as "
                               "it is (tapes look gradients up by op type); kept")
    return kept
