"""The package's import graph: which parts of `compat` import which, read from the source (no import runs).

Each part is a subpackage (`compat.contexts`) or a top-level module (`compat.runner`); an import anywhere in a
module counts, function-local ones too (a lazy import is still a dependency), except under `if TYPE_CHECKING:`.
`__main__` modules are entry points nothing imports, so they are left out.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "compat"

def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imported(node: ast.AST, package: str, modules: set[str]) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if not isinstance(node, ast.ImportFrom):
        return []
    base = node.module or ""
    if node.level:
        parent = package.split(".")[: len(package.split(".")) - (node.level - 1)]
        base = ".".join(parent + ([base] if base else []))
    return [base] + [f"{base}.{alias.name}" for alias in node.names if f"{base}.{alias.name}" in modules]


def _type_checking_blocks(tree: ast.Module) -> set[int]:
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped.update(id(inner) for child in node.body for inner in ast.walk(child))
    return skipped


def _part(module: str) -> str:
    return ".".join(module.split(".")[:2])


def import_graph() -> dict[str, set[str]]:
    """Part -> the other parts of the package it imports."""
    paths = {(_module_name(p)): p for p in PACKAGE.rglob("*.py") if p.name != "__main__.py"}
    graph: dict[str, set[str]] = defaultdict(set)
    for module, path in paths.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
        skipped = _type_checking_blocks(tree)
        for node in ast.walk(tree):
            if id(node) in skipped:
                continue
            for target in _imported(node, package, set(paths)):
                if target.startswith("compat.") and _part(target) != _part(module):
                    graph[_part(module)].add(_part(target))
    return graph


def cycles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components of more than one part (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[set[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                component.add(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(component)

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_import_cycles():
    found = [sorted(c) for c in cycles(import_graph())]
    assert not found, f"import cycles between parts of compat: {found}; make the dependency one-way"


def test_the_cycle_finder_finds_a_cycle_and_nothing_else():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [{"a", "b", "c"}]


def test_the_audit_and_the_rewriter_do_not_depend_on_the_runtime_parts():
    graph = import_graph()
    runtime = {"compat.contexts", "compat.mechanisms", "compat.runner", "compat.probe", "compat.distribute"}
    for part in ("compat.audit", "compat.rewrite"):
        reached, todo = set(), [part]
        while todo:
            for target in graph.get(todo.pop(), ()):
                if target not in reached:
                    reached.add(target)
                    todo.append(target)
        assert not reached & runtime, f"{part} imports {sorted(reached & runtime)}, which need TensorFlow"


def private_imports_across_parts() -> list[str]:
    """`module imports part.name` for every `_name` a module imports from another part of the package."""
    found = []
    for path in PACKAGE.rglob("*.py"):
        module = _module_name(path)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ImportFrom) or node.level or not (node.module or "").startswith("compat."):
                continue
            if _part(node.module) == _part(module):
                continue
            found += [f"{module} imports {node.module}.{alias.name}" for alias in node.names
                      if alias.name.startswith("_") and not alias.name.startswith("__")]
    return found


def test_no_part_imports_another_parts_private_names():
    """A private name is free to change; a part that needs another's helper gets a public one (`op_builder`,
    `recorded_gradients`), so a refactor of one part cannot silently break another."""
    assert private_imports_across_parts() == []
