"""ModuleContext: one code-generation pass gives LibCST's own positions and parents, and walks in source order."""

from __future__ import annotations

import libcst as cst
import libcst.metadata as meta
import pytest

from compat.rewrite.context import ModuleContext, walk_tree

# Syntax whose nodes LibCST lists in an unusual order, or that has nodes of its own.
ODD_SYNTAX = '''\
"""Docstring."""
from __future__ import annotations

import os.path as osp, sys
from typing import (Any,
                    cast as c)


@decorator(arg=1)
class A(Base, metaclass=Meta):
    x: int = 1

    async def f(self, a, /, b=2, *args, c, d: "A" = None, **kw) -> list[int]:
        global G
        del a, b[0], (c)
        async with open(a) as f, open(b):
            pass
        async for i in range(3):
            yield i
        return [y for y in args if (z := y)] + {k: v for k, v in kw.items()}.get(f"{a!r:>{b}}", lambda q=1: q)


try:
    import numpy as np
except ImportError as e:
    raise RuntimeError("no numpy") from e
else:
    pass
finally:
    print(*sys.argv, sep="\\n")
match sys.argv:
    case [_, "x", *rest] if rest:
        pass
    case {"k": v, **others}:
        pass
x = 1 if osp else 2  # trailing comment
# a comment before the end
'''


def _sources(runner) -> list[str]:
    return [ODD_SYNTAX] + [(folder / f"{name}.py").read_text(encoding="utf-8")
                           for folder in (runner.LEGACY, runner.EXPECTED) for name in runner.corpus_names()]


def _significant(nodes) -> list[cst.CSTNode]:
    """Nodes other than whitespace, whose order LibCST's `children` gives oddly in `import a as b` and `del`."""
    return [n for n in nodes if not isinstance(n, cst.BaseParenthesizableWhitespace)]


def test_positions_and_parents_are_libcst_s(runner) -> None:
    for source in _sources(runner):
        ctx = ModuleContext(source)
        stock = meta.MetadataWrapper(ctx.module, unsafe_skip_copy=True).resolve_many(
            [meta.PositionProvider, meta.ParentNodeProvider])
        nodes = list(walk_tree(ctx.module))
        assert len(nodes) == len(set(map(id, nodes))), "a freshly parsed tree shares no node"
        for node in nodes:
            assert ctx.positions[node] == stock[meta.PositionProvider][node], node
            assert ctx.parent(node) is stock[meta.ParentNodeProvider].get(node), node


@pytest.mark.parametrize("skip_functions", [False, True])
def test_walk_and_children_follow_the_source(runner, skip_functions: bool) -> None:
    for source in _sources(runner):
        ctx = ModuleContext(source)
        for node in walk_tree(ctx.module):
            if not isinstance(node, cst.Module | cst.BaseStatement | cst.BaseSuite | cst.Call | cst.Lambda):
                continue
            assert _significant(ctx.walk(node, skip_functions)) == _significant(walk_tree(node, skip_functions))
            assert _significant(ctx.children(node)) == _significant(node.children)


def test_a_node_outside_the_tree_is_walked_through_its_children() -> None:
    ctx = ModuleContext("x = 1\n")
    outside = cst.parse_expression("f(a, b)")
    assert list(ctx.walk(outside)) == list(walk_tree(outside))
    assert list(ModuleContext.walk(outside)) == list(walk_tree(outside))  # without a context, as before
    assert ctx.children(outside) == list(outside.children)


def test_scopes_are_resolved_once_and_only_when_asked() -> None:
    ctx = ModuleContext("def f(x):\n    return x\n")
    assert "scopes" not in vars(ctx)
    assert ctx.scopes is ctx.scopes
    function = ctx.module.body[0]
    assert isinstance(ctx.scopes[function.body], meta.FunctionScope)  # type: ignore[attr-defined]
