"""RegisterGradient of a real op type that no override map uses: valid TF2 as it is, so kept (an audit note)."""

from __future__ import annotations

import ast
import dataclasses
import os
from collections.abc import Iterable

from compat.audit import data as tf_data
from compat.audit.engine import unused_op_type
from compat.audit.findings import FileResult
from compat.audit.visitor import audit_tree

_MAX_IMPORTED_BYTES = 1024 * 1024  # an imported module larger than this is not read


@dataclasses.dataclass(frozen=True)
class TreeFacts:
    """What the files rewritten together say about each other (compat-rewrite over a tree, as the audit sees it).

    Attributes:
      override_targets: gradient names some override map in those files uses (literal map values).
      op_library_paths: the files among them that call tf.load_op_library.
      files: how many files.
    """

    override_targets: frozenset[str] = frozenset()
    op_library_paths: frozenset[str] = frozenset()
    files: int = 0

    @classmethod
    def of(cls, audits: Iterable[FileResult]) -> TreeFacts:
        """The facts of the files whose (per-file) audits are `audits`."""
        audits = list(audits)
        return cls(frozenset(site.name for a in audits for site in a.override_targets),
                   frozenset(a.path for a in audits if a.loads_op_library), len(audits))


def audit_source(text: str, path: str) -> tuple[FileResult, ast.Module]:
    """The audit's per-file result for `text` (the source of `path`), and its syntax tree; never imports
    TensorFlow."""
    module = ast.parse(text)
    return audit_tree(path, module, text, tf_data.load(), text.count("\n") + 1), module


def kept_registrations(audit: FileResult, module: ast.Module, tree: TreeFacts | None = None) -> dict[int, str]:
    """Line of each `RegisterGradient("Name")` to keep as it is -> the reason.

    Kept: the gradient of a real op type (a TensorFlow op with no gradient of its own, or a custom op its file, or
    a module next to it that it imports, loads with tf.load_op_library) whose name no override map in this file,
    nor in `tree`, uses. TF2's tapes look gradients up by op type, so the registration works unchanged.
    `module`: the file's syntax tree (`audit.path` is where it is, to find the modules it imports).
    """
    used = {site.name for site in audit.override_targets}
    libraries = {audit.path} if audit.loads_op_library else set()
    if tree is not None:
        used |= tree.override_targets
        libraries |= tree.op_library_paths
    loader = None if audit.path in libraries or not audit.registrations else _imported_op_library(audit.path, module)
    if loader is not None:
        libraries.add(audit.path)
    scope = "the files rewritten together" if tree is not None and tree.files > 1 else "this file"
    kept = {}
    for site in audit.registrations:
        kind = unused_op_type(site, used, tf_data.load(), libraries)
        if kind is not None and loader is not None and kind.startswith("an op this file"):
            kind = f"an op `{loader}`, which this file imports, loads with tf.load_op_library"
        if kind is not None:
            kept[site.line] = (f"RegisterGradient({site.name!r}) registers the gradient of op type {site.name!r} "
                               f"itself ({kind}), and no gradient_override_map in {scope} uses it: valid TF2 as "
                               "it is (tapes look gradients up by op type); kept")
    return kept


def _imported_op_library(path: str, module: ast.Module) -> str | None:
    """The first module `module` (the file `path`) imports, found next to it on disk, that calls
    tf.load_op_library (`import roi_pooling_op` beside roi_pooling_op_grad.py), or None."""
    if not os.path.isfile(path):  # `rewrite_source(text)` of no file: nothing is next to it
        return None
    directory = os.path.dirname(os.path.abspath(path))
    for node in module.body:
        for name, level in _imported(node):
            base = directory
            for _ in range(max(level - 1, 0)):
                base = os.path.dirname(base)
            parts = name.split(".") if name else []
            for candidate in (os.path.join(base, *parts) + ".py", os.path.join(base, *parts, "__init__.py")):
                if parts and os.path.isfile(candidate) and _loads_op_library(candidate):
                    return name
    return None


def _imported(node: ast.stmt) -> list[tuple[str, int]]:
    """(dotted module name, relative level) of each module a top-level import statement may load."""
    if isinstance(node, ast.Import):
        return [(alias.name, 0) for alias in node.names]
    if isinstance(node, ast.ImportFrom):
        base = node.module or ""
        return [(base, node.level)] * bool(base) + [
            (f"{base}.{alias.name}" if base else alias.name, node.level) for alias in node.names]
    return []


def _loads_op_library(path: str) -> bool:
    try:
        with open(path, "rb") as handle:
            source = handle.read(_MAX_IMPORTED_BYTES)
        tree = ast.parse(source) if b"load_op_library" in source else None
    except (OSError, SyntaxError, ValueError, RecursionError):
        return False
    return tree is not None and any(
        isinstance(node, ast.Call) and _leaf(node.func) == "load_op_library" for node in ast.walk(tree))


def _leaf(node: ast.expr) -> str | None:
    return node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else None
