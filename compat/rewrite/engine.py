"""Rewrite one module's text: find every legacy site, plan the edits, apply them, tidy up (no TensorFlow import)."""

from __future__ import annotations

import functools

import libcst as cst

from compat.audit.suggestions import snake
from compat.rewrite import builtin_gradients, cleanup
from compat.rewrite.context import ModuleContext
from compat.rewrite.defun import find_defuns, plan_defuns
from compat.rewrite.kept import TreeFacts, audit_source, kept_registrations
from compat.rewrite.names import local_names
from compat.rewrite.newlines import keep_final_newlines
from compat.rewrite.override_map import (
    GradKey,
    OverrideNest,
    OverrideUse,
    find_nests,
    map_values,
    runtime_map_values,
    stray_map_calls,
)
from compat.rewrite.partial import apply_plan, plan_node_ids
from compat.rewrite.plan import CallEdit, Plan
from compat.rewrite.register_gradient import Registration, build, check_uses, find_registrations, new_name
from compat.rewrite.result import SourceResult
from compat.rewrite.unfollowed import plan_unfollowed

TRIGGER_WORDS = ("Defun", "RegisterGradient", "gradient_override_map")


def rewrite_source(text: str, path: str = "<string>", tree: TreeFacts | None = None) -> SourceResult:
    """Rewrite `text` (the source of `path`); raises libcst.ParserSyntaxError if it does not parse.

    Returns the new text (identical when there is nothing to do) and one `Site` per legacy pattern, each
    `rewritten`, `kept` (valid TF2 as it is, unchanged) or `todo` (left unchanged with a `# TODO(gradcompat): ...`
    comment saying why). `tree`: what the other files rewritten together say (override maps using a gradient
    registered here keep it from being `kept`); without it, this file alone.
    """
    if not any(word in text for word in TRIGGER_WORDS):
        return SourceResult(text)
    ctx = ModuleContext(text)
    alias = ctx.tf_alias()
    plan = Plan(tf_alias=alias or "tf", add_tf_import=alias is None and "tf" not in ctx.used_names)
    if alias is None and "tf" in ctx.used_names:
        plan.tf_alias = ctx.fresh("tensorflow_")
        plan.add_tf_import = True
    audit, syntax = audit_source(text, path)
    _plan_overrides(ctx, plan, kept_registrations(audit, syntax, tree))
    plan_defuns(ctx, find_defuns(ctx), plan)
    plan_unfollowed(ctx, plan, text, audit)
    if not plan.sites:
        return SourceResult(text)
    plan.sites.sort()
    if not any(s.outcome == "rewritten" for s in plan.sites):
        plan.add_tf_import = False
    new = apply_plan(ctx.module, plan, ctx.path_ids_to(plan_node_ids(plan)))
    code = cleanup.tidy(new, ctx, plan)
    return SourceResult(keep_final_newlines(text, code), tuple(plan.sites))


def _plan_overrides(ctx: ModuleContext, plan: Plan, kept: dict[int, str]) -> None:
    nests = find_nests(ctx)
    registrations = find_registrations(ctx)
    by_key = {r.key: r for r in registrations if r.key is not None}
    duplicated = {r.key for r in registrations if r.key is not None} if len(by_key) != len(
        [r for r in registrations if r.key is not None]) else set()
    runtime = _runtime_map_values(ctx, nests)
    for nest in nests:
        for use in nest.uses if not nest.runtime_map else ():
            reg = by_key.get(use.gradient)
            builtin = builtin_gradients.lookup(use.gradient) if isinstance(use.gradient, str) else None
            if reg is not None and use.operator is not None:
                nest.refuse(f"the map gives the Mul of `{ctx.code(use.operator).strip()}` the gradient {use.shown} "
                            "registered in this file: write it as a @tf.custom_gradient by hand")
            elif reg is not None:
                reg.uses.append(use)
            elif builtin is None:
                nest.refuse(f"gradient {use.shown} is neither registered in this file nor a built-in gradient "
                            f"gradcompat writes out ({', '.join(builtin_gradients.BUILTIN_GRADIENTS)}): write "
                            f"`{ctx.code(use.call.func)}` as a @tf.custom_gradient whose grad computes it, by hand")
            elif len(use.wrapper.inputs) != builtin.inputs:
                nest.refuse(f"the built-in gradient {use.shown} has {builtin.inputs} input(s) but "
                            f"`{ctx.code(use.call.func)}` has {len(use.wrapper.inputs)}: rewrite by hand")
    blocked = _refused_map_values(ctx, nests)
    for reg in registrations:
        if reg.key in duplicated:
            reg.refuse(f"gradient {reg.shown} is registered more than once in this file: rewrite by hand")
        elif reg.line in kept and not reg.uses:
            reg.kept = kept[reg.line]
        elif not reg.uses and reg.key in runtime:
            reg.kept = (f"gradient {reg.shown} is used by the override map at line {runtime[reg.key]}, entered "
                        "with compat.gradient_override_map, which looks it up by name: valid TF2 as it is; kept")
        elif not reg.uses and reg.key in blocked:
            reg.refuse(f"an override map using gradient {reg.shown} is not rewritten (see the TODO there): fix "
                       "that, or rewrite both by hand")
    _settle(ctx, nests, registrations)
    for nest in nests:
        _plan_nest(ctx, plan, nest, by_key)
    for reg in registrations:
        _plan_registration(ctx, plan, reg)
    for call in stray_map_calls(ctx):
        plan.todo(ctx.statement(call), ctx.line(call), "override_map",
                  "gradient_override_map is not entered with a `with` statement here: rewrite by hand")


def _refused_map_values(ctx: ModuleContext, nests: list[OverrideNest]) -> set[object]:
    """The gradient names the maps left as TODOs use (their ops unseen: no use links them to registrations)."""
    return {key for nest in nests if nest.problem and not nest.runtime_map for key, _ in _map_values(ctx, nest)}


def _runtime_map_values(ctx: ModuleContext, nests: list[OverrideNest]) -> dict[GradKey | None, int]:
    """Gradient name -> line of the map using it, for maps entered with `compat.gradient_override_map` (now, or
    by an earlier run)."""
    found: dict[GradKey | None, int] = {key: line for key, line in runtime_map_values(ctx).items()}
    found.update({key: line for nest in nests if nest.runtime_map for key, line in _map_values(ctx, nest)})
    return found


def _map_values(ctx: ModuleContext, nest: OverrideNest) -> list[tuple[GradKey | None, int]]:
    return [(key, ctx.line(call)) for call in nest.map_calls for key in map_values(ctx, call)]


def _settle(ctx: ModuleContext, nests: list[OverrideNest], registrations: list[Registration]) -> None:
    """A map using a gradient that is not rewritten is not rewritten, and the other way round, until stable."""
    while True:
        for reg in registrations:
            check_uses(ctx, reg)
        changed = False
        for reg in registrations:
            for use in reg.uses:
                if reg.problem is not None and use.nest.problem is None:
                    use.nest.refuse(f"gradient {use.shown} is not rewritten where it is registered (see the "
                                    "TODO there): fix that, or rewrite both by hand")
                    changed = True
        if not changed:
            return


def _plan_nest(ctx: ModuleContext, plan: Plan, nest: OverrideNest, by_key: dict) -> None:
    if nest.runtime_map:
        _plan_runtime_map(ctx, plan, nest)
        return
    if nest.problem is not None:
        for call in nest.map_calls:
            plan.todo(nest.outer, ctx.line(call), "override_map", nest.problem)
        return
    for with_node in nest.withs:
        plan.unwraps[id(with_node)] = frozenset(nest.items[id(with_node)])
    plan.graph_handles |= nest.handles
    for use in nest.uses:
        reg = by_key.get(use.gradient)
        if reg is not None:
            reg.new_name = reg.new_name or new_name(ctx, reg)
            function = reg.new_name
        else:
            function = _builtin_helper(ctx, plan, use)
        plan.calls[id(use.replaced)] = CallEdit(function, use.tensor_args)
    for call in nest.map_calls:
        ops = sorted({f"{u.op_type}->{u.shown}" for u in nest.uses}) or ["no op in the block"]
        plan.rewritten(ctx.line(call), "override_map", "custom_gradient for " + ", ".join(ops))


def _plan_runtime_map(ctx: ModuleContext, plan: Plan, nest: OverrideNest) -> None:
    """The block yields: its ops are built by the caller, so the map stays, entered the way TF2 honours it."""
    if plan.compat_alias is None:
        plan.compat_alias = "compat" if "compat" not in ctx.used_names else ctx.fresh("gradcompat")
    plan.graph_handles |= nest.handles
    for call in nest.map_calls:
        plan.calls[id(call)] = CallEdit(f"{plan.compat_alias}.gradient_override_map", (0,))
        plan.rewritten(ctx.line(call), "override_map",
                       "compat.gradient_override_map: the block yields, so the caller builds the ops; entered "
                       "while a graph is built (a tf.function, a tf.compat.v1 graph) it overrides them for graph "
                       "gradients and tapes, and it raises eagerly, where TF2 could not honour it")


def _builtin_helper(ctx: ModuleContext, plan: Plan, use: OverrideUse) -> str:
    """A module-level custom_gradient for `use` with a built-in gradient, shared by calls with one signature."""
    helpers = plan.helper_names
    key = (use.signature, use.gradient)
    if key in helpers:
        return helpers[key]
    gradient = builtin_gradients.lookup(str(use.gradient))
    assert gradient is not None
    name = ctx.fresh(f"_{snake(use.op_type)}_with_{snake(str(use.gradient))}_grad")
    # The helper's locals never hide a name the op call reads besides its tensor (`name=y`, y imported).
    x, x2, y, grad, dy = local_names(("x", "x2", "y", "grad", "dy"), use.other_names())
    tensor = use.tensor_positions()
    inputs = (x, x2)[:len(tensor)]
    args = [cst.Arg(cst.Name(inputs[tensor.index(i)])) if i in tensor else a for i, a in enumerate(use.call.args)]
    forward = ctx.module.code_for_node(use.call.with_changes(args=args))
    if use.operator is not None:  # written as the user wrote it
        forward = ctx.module.code_for_node(use.operator.with_changes(left=cst.Name(x), right=cst.Name(x2)))
    entry = f'"{use.op_type}": {use.shown}'
    source = (f"# Rewritten by gradcompat from gradient_override_map({{{entry}}}).\n"
              f"@{plan.tf_alias}.custom_gradient\n"
              f"def {name}({', '.join(inputs)}):\n"
              f"    {y} = {forward}\n\n"
              f"    def {grad}({dy}):\n"
              f"        return {gradient.expression(dy, inputs, plan.tf_alias)}\n\n"
              f"    return {y}, {grad}\n")
    plan.helpers.append(cst.parse_statement(source, config=ctx.module.config_for_parsing))
    helpers[key] = name
    return name


def _build_registration(ctx: ModuleContext, reg: Registration, tf: str,
                        updated: cst.CSTNode) -> list[cst.BaseStatement]:
    assert isinstance(updated, cst.FunctionDef)
    return [build(ctx, reg, tf, updated)]


def _plan_registration(ctx: ModuleContext, plan: Plan, reg: Registration) -> None:
    if reg.kept:
        plan.kept(reg.line, "register_gradient", reg.kept)
        return
    if reg.problem is not None or reg.fn is None:
        plan.todo(reg.anchor, reg.line, "register_gradient", reg.problem or "rewrite by hand")
        return
    if isinstance(reg.key, tuple):
        for use in reg.uses:
            plan.key_names.add(use.shown)
        if reg.call.args:
            plan.key_names.add(ctx.code(reg.call.args[0].value))
    plan.replace(reg.fn, functools.partial(_build_registration, ctx, reg, plan.tf_alias))
    if reg.hoist_from is not None:
        plan.hoists[id(reg.fn)] = id(reg.hoist_from)
    if reg.statement is not None:
        plan.remove(reg.statement)
    plan.rewritten(reg.line, "register_gradient", f"@{plan.tf_alias}.custom_gradient {reg.new_name}")
