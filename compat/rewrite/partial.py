"""Carry out a Plan entering only the nodes that hold an edit: everything else keeps its very node object.

LibCST's transformers rebuild every node they pass, so applying a few edits to a large module costs a copy of
all of it; entering only the path to each edit costs what the edits cost. The untouched module-level statements
of the result are then the original's own objects, which `cleanup.tidy` relies on.
"""

from __future__ import annotations

import dataclasses

import libcst as cst

from compat.rewrite.apply import ApplyPlan
from compat.rewrite.plan import Plan


def plan_node_ids(plan: Plan) -> set[int]:
    """The ids of every node the plan edits: the int keys (and int values, as `hoists` has) of its dict fields."""
    found: set[int] = set()
    for field in dataclasses.fields(plan):
        value = getattr(plan, field.name)
        if isinstance(value, dict):
            found |= {key for key in value if isinstance(key, int)}
            found |= {item for item in value.values() if isinstance(item, int)}
    return found


class PrunedApplyPlan(ApplyPlan):
    """`ApplyPlan` entering only the module and the nodes whose ids are in `open_ids` (the edits' ancestors)."""

    def __init__(self, plan: Plan, open_ids: set[int]) -> None:
        super().__init__(plan)
        self.open_ids = open_ids

    def on_visit(self, node: cst.CSTNode) -> bool:
        return super().on_visit(node) and (isinstance(node, cst.Module) or id(node) in self.open_ids)


def apply_plan(module: cst.Module, plan: Plan, open_ids: set[int] | None) -> cst.Module:
    """`module` with `plan` carried out; `open_ids` None (an edit's ancestors unknown) enters every node."""
    transformer = ApplyPlan(plan) if open_ids is None else PrunedApplyPlan(plan, open_ids)
    result = module.visit(transformer)
    assert isinstance(result, cst.Module)
    return result
