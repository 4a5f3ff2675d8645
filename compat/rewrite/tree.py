"""Across files: a map in one module using a gradient that another module of the tree registers.

`rewrite_paths` indexes, before rewriting, every top-level `@X.RegisterGradient("Name")` function of the tree
(with `ast`, cheap). A module whose override map uses a name registered in exactly one other module gets a copy
of that function inserted after its leading imports and is rewritten with it, as if registered there: the map
becomes a `@tf.custom_gradient` built from it, the copy disappears into it. Only when the copy is provably the
same function there (every name it reads is a builtin or an import that both modules bind alike, its own name
unused in the module) and the rewrite consumes it; else the module is rewritten alone, the map left a TODO.
The registering module keeps its registration (valid TF2). A name registered anywhere else in the tree
(literally or by a module constant, under `if`, in a function, as `RegisterGradient(NAME)(fn)`) is not borrowed.
"""

from __future__ import annotations

import ast
import builtins
import dataclasses
from collections.abc import Iterable, Iterator, Mapping

from compat.rewrite.engine import rewrite_source
from compat.rewrite.kept import TreeFacts
from compat.rewrite.result import Site, SourceResult

_IMPORTS = (ast.Import, ast.ImportFrom)


@dataclasses.dataclass(frozen=True)
class Registered:
    """A top-level function registered as gradient `name` in `path`: its source, and the imports it reads."""

    path: str
    name: str
    function: str
    source: str
    imports: Mapping[str, str]  # the names it reads besides builtins -> the import binding them in its module


def _imports(tree: ast.Module) -> dict[str, str]:
    """Names bound by top-level imports -> a canonical spelling of the import (`import tensorflow as tf`)."""
    bound: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.Import):
            for alias in node.names:
                bound[alias.asname or alias.name.split(".")[0]] = f"import {alias.name}" + (
                    f" as {alias.asname}" if alias.asname else "")
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            for alias in node.names:
                bound[alias.asname or alias.name] = f"from {node.module} import {alias.name}"
    return bound


def _registered_name(function: ast.FunctionDef) -> str | None:
    if len(function.decorator_list) != 1:
        return None
    decorator = function.decorator_list[0]
    if not (isinstance(decorator, ast.Call) and len(decorator.args) == 1 and not decorator.keywords
            and isinstance(decorator.func, ast.Attribute | ast.Name)
            and (decorator.func.attr if isinstance(decorator.func, ast.Attribute) else decorator.func.id)
            == "RegisterGradient"):
        return None
    arg = decorator.args[0]
    return arg.value if isinstance(arg, ast.Constant) and isinstance(arg.value, str) else None


def _free_names(function: ast.FunctionDef) -> set[str] | None:
    """Names the function (decorator included) reads but does not bind, or None if it nests scopes."""
    bound = {function.name}
    read: set[str] = set()
    for node in ast.walk(function):
        if isinstance(node, ast.Global | ast.Nonlocal | ast.Lambda | ast.ClassDef) or (
                isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node is not function):
            return None  # one scope only: a name is then either the function's own or its module's
        if isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.Name):
            (read if isinstance(node.ctx, ast.Load) else bound).add(node.id)
    return read - bound - set(dir(builtins))


def index(sources: Iterable[tuple[str, str]]) -> dict[str, list[Registered]]:
    """Gradient name -> every registration of it, over (path, text) pairs that parse; only top-level decorated
    functions carry their source (usable), the others (under `if`, in functions, `RegisterGradient(NAME)(fn)`)
    are counted so that a name registered twice is never borrowed."""
    found: dict[str, list[Registered]] = {}
    for path, text in sources:
        if "RegisterGradient" not in text:
            continue
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError):
            continue
        usable = {id(r[0]): r for r in _usable(tree, text, path)}
        constants = _string_constants(tree)
        for node in ast.walk(tree):
            name = _registration_call(node, constants)
            if name is not None:
                reg = usable.get(id(node))
                found.setdefault(name, []).append(reg[1] if reg else Registered(path, name, "", "", {}))
    return found


def _usable(tree: ast.Module, text: str, path: str) -> Iterator[tuple[ast.Call, Registered]]:
    imports = _imports(tree)
    for node in tree.body:
        name = _registered_name(node) if isinstance(node, ast.FunctionDef) else None
        free = _free_names(node) if name is not None and isinstance(node, ast.FunctionDef) else None
        if name is None or free is None or not free <= set(imports):
            continue
        assert isinstance(node, ast.FunctionDef) and isinstance(node.decorator_list[0], ast.Call)
        source = "\n".join(text.splitlines()[node.decorator_list[0].lineno - 1:node.end_lineno])
        yield node.decorator_list[0], Registered(path, name, node.name, source, {n: imports[n] for n in free})


def _string_constants(tree: ast.Module) -> dict[str, str]:
    return {t.id: node.value.value for node in tree.body if isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
            for t in node.targets if isinstance(t, ast.Name)}


def _registration_call(node: ast.AST, constants: Mapping[str, str]) -> str | None:
    """The name a `RegisterGradient(...)` call registers: a literal, or a module constant; else None."""
    if not (isinstance(node, ast.Call) and len(node.args) == 1 and isinstance(node.func, ast.Attribute | ast.Name)
            and (node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id) == "RegisterGradient"):
        return None
    arg = node.args[0]
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        return arg.value
    return constants.get(arg.id) if isinstance(arg, ast.Name) else None


def _map_names(tree: ast.Module) -> set[str]:
    """Gradient names written as string literals in this module's `gradient_override_map({...})` calls."""
    names = set()
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "gradient_override_map" and len(node.args) == 1
                and isinstance(node.args[0], ast.Dict)):
            names |= {v.value for v in node.args[0].values if isinstance(v, ast.Constant) and isinstance(v.value, str)}
    return names


def _borrowable(text: str, path: str, registry: Mapping[str, list[Registered]]) -> tuple[list[Registered], int]:
    """The registrations from other modules this module's maps need and can take, and where to insert them."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return [], 0
    local = {n for n in (_registered_name(f) for f in ast.walk(tree) if isinstance(f, ast.FunctionDef)) if n}
    used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | {
        f.name for f in ast.walk(tree) if isinstance(f, ast.FunctionDef | ast.ClassDef)}
    lead = 0  # statements before the insertion point: docstring, imports
    for i, node in enumerate(tree.body):
        if isinstance(node, _IMPORTS) or (i == 0 and isinstance(node, ast.Expr)
                                          and isinstance(node.value, ast.Constant)):
            lead = i + 1
        else:
            break
    imports = _imports(ast.Module(body=tree.body[:lead], type_ignores=[]))
    chosen = []
    for name in sorted(_map_names(tree) - local):
        candidates = registry.get(name, [])
        if len(candidates) != 1 or not candidates[0].source or candidates[0].path == path:
            continue
        reg = candidates[0]
        if reg.function in used or any(imports.get(n) != spelled for n, spelled in reg.imports.items()):
            continue
        chosen.append(reg)
    line = tree.body[lead - 1].end_lineno if lead else 0
    return chosen, line or 0


def rewrite_in_tree(text: str, path: str, registry: Mapping[str, list[Registered]],
                    facts: TreeFacts | None = None) -> SourceResult:
    """`rewrite_source(text, path, facts)`, with the gradients registered elsewhere in the tree that its maps use."""
    alone = rewrite_source(text, path, facts)
    if not any(s.outcome == "todo" and s.pattern == "override_map" for s in alone.sites):
        return alone
    borrowed, after = _borrowable(text, path, registry)
    if not borrowed:
        return alone
    lines = text.splitlines(keepends=True)
    inserted = "".join(f"\n\n{reg.source}\n" for reg in borrowed)
    inserted += "\n\n" if after < len(lines) and lines[after].strip() else ""
    count = inserted.count("\n")
    combined = rewrite_source("".join(lines[:after]) + inserted + "".join(lines[after:]), path, facts)
    ours, theirs = [], []
    for site in combined.sites:
        if after < site.line <= after + count:
            theirs.append(site)
        else:
            ours.append(dataclasses.replace(site, line=site.line - count if site.line > after else site.line))
    consumed = combined.text.count("RegisterGradient") == text.count("RegisterGradient") and not any(
        reg.source in combined.text for reg in borrowed)
    if len(theirs) != len(borrowed) or any(s.outcome != "rewritten" for s in theirs) or not consumed:
        return alone
    sites = tuple(sorted(dataclasses.replace(s, reason=f"{s.reason} (registered in {_where(borrowed, s)})")
                         if s.outcome == "rewritten" and s.pattern == "override_map" else s for s in ours))
    return SourceResult(combined.text, sites)


def _where(borrowed: list[Registered], site: Site) -> str:
    return ", ".join(sorted({f"{reg.path}: {reg.function}" for reg in borrowed if reg.name in site.reason}))
