"""Custom op types a code base defines: `REGISTER_OP("Name")` in its C++ sources, `tf.load_op_library` modules."""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Iterable

from compat.audit.walker import iter_python_files
from compat.regular_files import read_regular

NATIVE_SUFFIXES = (".cc", ".cpp", ".cxx", ".cu")
"""C++/CUDA sources searched for `REGISTER_OP` (`roi_pooling_op.cc`, `kernels.cu.cc`)."""
MAX_NATIVE_BYTES = 4 * 1024 * 1024
"""The part of a C++ source read (op registrations sit near the top; a generated giant is not read whole)."""
MAX_IMPORTED_BYTES = 1024 * 1024
"""An imported module larger than this is not read for `tf.load_op_library`."""
_REGISTER_OP = re.compile(rb'\bREGISTER_OP\s*\(\s*"([A-Za-z_][A-Za-z0-9_>]*)"\s*\)')


def registered_op_types(paths: Iterable[str], excludes: Iterable[str] = (), *,
                        default_excludes: bool = True) -> dict[str, str]:
    """Op type -> the C++ source under the directories in `paths` that registers it with `REGISTER_OP`.

    Files named in `paths` are not searched (only what a walk of a directory finds: a tree's own ops); the walk
    skips what `compat.audit.walker.iter_python_files` skips. Unreadable and special files are passed over.
    """
    directories = [path for path in paths if os.path.isdir(path)]
    found: dict[str, str] = {}
    for path in iter_python_files(directories, excludes, default_excludes=default_excludes,
                                  suffixes=NATIVE_SUFFIXES):
        if path.endswith(NATIVE_SUFFIXES):
            for name in _op_names(path):
                found.setdefault(name, path)
    return found


def op_types_beside(path: str) -> dict[str, str]:
    """Op type -> the C++ source next to the file `path` (same directory, not below) that registers it."""
    return op_types_in(os.path.dirname(os.path.abspath(path)))


def op_types_in(directory: str) -> dict[str, str]:
    """Op type -> the C++ source directly in `directory` (not below) that registers it."""
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return {}
    found: dict[str, str] = {}
    for name in names:
        if name.endswith(NATIVE_SUFFIXES):
            source = os.path.join(directory, name)
            for op in _op_names(source):
                found.setdefault(op, source)
    return found


def _op_names(path: str) -> list[str]:
    data = read_regular(path, MAX_NATIVE_BYTES, b"REGISTER_OP")
    return [m.group(1).decode() for m in _REGISTER_OP.finditer(data)] if data else []


def imported_op_library(path: str, module: ast.Module) -> str | None:
    """The first module that `module` (the source of the file `path`) imports, found next to it on disk, that
    calls tf.load_op_library (`import roi_pooling_op` beside roi_pooling_op_grad.py), or None."""
    if not os.path.isfile(path):  # source of no file: nothing is next to it
        return None
    directory = os.path.dirname(os.path.abspath(path))
    for node in module.body:
        for name, level in _imported(node):
            base = directory
            for _ in range(max(level - 1, 0)):
                base = os.path.dirname(base)
            parts = name.split(".") if name else []
            for candidate in (os.path.join(base, *parts) + ".py", os.path.join(base, *parts, "__init__.py")):
                if parts and loads_op_library(candidate):
                    return name
    return None


def loads_op_library(path: str) -> bool:
    """Whether the Python file `path` calls tf.load_op_library (any alias); False when it cannot be read."""
    source = read_regular(path, MAX_IMPORTED_BYTES, b"load_op_library")
    try:
        tree = ast.parse(source) if source else None
    except (SyntaxError, ValueError, RecursionError):
        return False
    return tree is not None and any(
        isinstance(node, ast.Call) and _leaf(node.func) == "load_op_library" for node in ast.walk(tree))


def _imported(node: ast.stmt) -> list[tuple[str, int]]:
    """(dotted module name, relative level) of each module a top-level import statement may load."""
    if isinstance(node, ast.Import):
        return [(alias.name, 0) for alias in node.names]
    if isinstance(node, ast.ImportFrom):
        base = node.module or ""
        return [(base, node.level)] * bool(base) + [
            (f"{base}.{alias.name}" if base else alias.name, node.level) for alias in node.names]
    return []


def _leaf(node: ast.expr) -> str | None:
    return node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else None

