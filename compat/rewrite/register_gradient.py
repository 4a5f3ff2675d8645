"""`RegisterGradient("Name")` functions: find them, check them, and rebuild each as a tf.custom_gradient.

The new function wraps the op its override map applied to (`tf.identity(x)`), in the place the gradient
function was defined, so closures (`l` in a per-call gradient reversal) still resolve.
"""

from __future__ import annotations

import dataclasses

import libcst as cst
import libcst.metadata as meta

from compat.audit.suggestions import snake
from compat.rewrite.context import ModuleContext
from compat.rewrite.grad_body import (
    Refused,
    adoptable_names,
    attr_key,
    map_gradient_body,
    reads_outputs_differentiably,
)
from compat.rewrite.names import local_fresh, names_in
from compat.rewrite.override_map import GradKey, OverrideUse, grad_key, is_map_call
from compat.rewrite.stateful import nondeterministic_call


@dataclasses.dataclass
class Registration:
    """One `RegisterGradient(name)` and the function it registers."""

    call: cst.Call
    line: int
    shown: str
    key: GradKey | None
    fn: cst.FunctionDef | None = None
    statement: cst.BaseStatement | None = None  # the `RegisterGradient(name)(fn)` line, call form only
    hoist_from: cst.If | None = None
    uses: list[OverrideUse] = dataclasses.field(default_factory=list)
    problem: str | None = None
    new_name: str = ""
    kept: str = ""  # why it stays as it is (a real op type's gradient no override map uses), when it does

    def refuse(self, reason: str) -> None:
        if self.problem is None:
            self.problem = reason

    @property
    def anchor(self) -> cst.CSTNode:
        """Where its TODO goes."""
        return self.fn if self.fn is not None and self.statement is None else (self.statement or self.call)


def find_registrations(ctx: ModuleContext) -> list[Registration]:
    found = []
    for node in ctx.walk(ctx.module):
        if isinstance(node, cst.Call) and ctx.tf_leaf(node.func) == "RegisterGradient":
            found.append(_registration(ctx, node))
    return found


def _registration(ctx: ModuleContext, call: cst.Call) -> Registration:
    arg = call.args[0].value if call.args else None
    reg = Registration(call, ctx.line(call), ctx.code(arg) if arg is not None else "",
                       grad_key(ctx, arg) if arg is not None else None)
    if reg.key is None:
        reg.refuse(f"the gradient is registered under `{reg.shown}`, a name computed at run time that the "
                   "rewriter cannot match to its override map: rewrite by hand as a @tf.custom_gradient")
    parent = ctx.parent(call)
    if isinstance(parent, cst.Decorator):
        fn = ctx.parent(parent)
        assert isinstance(fn, cst.FunctionDef)
        reg.fn = fn
        if len(fn.decorators) != 1:
            reg.refuse(f"`{fn.name.value}` has other decorators besides RegisterGradient: rewrite by hand")
        _check_unreferenced(ctx, reg, fn, allowed=0)
    elif isinstance(parent, cst.Call) and parent.func is call and len(parent.args) == 1:
        reg.statement = ctx.statement(parent)
        target = parent.args[0].value
        assignment = ctx.single_assignment(target) if isinstance(target, cst.Name) else None
        fn = assignment.node if assignment is not None else None
        expr_ok = (isinstance(reg.statement, cst.SimpleStatementLine) and len(reg.statement.body) == 1
                   and isinstance(reg.statement.body[0], cst.Expr) and reg.statement.body[0].value is parent)
        if not isinstance(fn, cst.FunctionDef) or not expr_ok:
            reg.refuse("RegisterGradient(...)(fn) registers something other than a function defined in this file, "
                       "or uses the result: rewrite by hand")
        else:
            reg.fn = fn
            if fn.decorators:
                reg.refuse(f"`{fn.name.value}` is decorated: rewrite by hand")
            _check_unreferenced(ctx, reg, fn, allowed=1)
    else:
        reg.refuse("RegisterGradient is used neither as a decorator nor as RegisterGradient(name)(fn): "
                   "rewrite by hand")
    if reg.fn is not None:
        _check_function(ctx, reg, reg.fn)
    return reg


def _check_unreferenced(ctx: ModuleContext, reg: Registration, fn: cst.FunctionDef, allowed: int) -> None:
    scope = ctx.scopes.get(fn)
    refs = {r.node for a in (scope[fn.name.value] if scope else ()) for r in a.references}
    if len(refs) > allowed:
        reg.refuse(f"`{fn.name.value}` is also used elsewhere as a function; rewriting it would change those "
                   "uses: rewrite by hand")


def _check_function(ctx: ModuleContext, reg: Registration, fn: cst.FunctionDef) -> None:
    params = fn.params
    if (not params.params or params.star_kwarg is not None or params.kwonly_params or params.posonly_params
            or any(p.default is not None for p in params.params)):
        reg.refuse(f"`{fn.name.value}` does not have the plain signature (op, *grads): rewrite by hand")
        return
    block = ctx.parent(fn)
    owner = ctx.parent(block) if block is not None else None
    if (isinstance(owner, cst.If) and owner.orelse is None and owner.body is block
            and not isinstance(ctx.parent(owner), cst.If)):  # an `elif` arm is no `if` to hoist it out of
        reg.hoist_from = owner
        block, owner = ctx.parent(owner), ctx.parent(ctx.parent(owner) or owner)
    # Up to its function or module: blocks that run the definition once, in order (a `with`, a `try` body), keep
    # it where it is; a loop would register it again, an arm or clause may never run it.
    while block is not None and not isinstance(block, cst.Module) and not isinstance(owner, cst.FunctionDef):
        if not _runs_once(owner, block):
            reg.refuse(f"`{fn.name.value}` is defined inside {_block_words(owner)}: rewrite by hand")
            return
        block = ctx.parent(owner) if owner is not None else None
        owner = ctx.parent(block) if block is not None else None
    op = params.params[0].name.value
    # op.type and op.get_attr("T") may be derivable from the op an override map applies it to: checked there.
    mapped = map_gradient_body(fn.body, op, ["_"] * 8, ["_"] * 8, {"type": "_", attr_key("T"): "_"})
    if isinstance(mapped, Refused):
        reg.refuse(f"{mapped.reason}: rewrite `{fn.name.value}` by hand as the inner grad of a @tf.custom_gradient")


def _runs_once(owner: cst.CSTNode | None, block: cst.CSTNode) -> bool:
    """Whether `block`, a suite of `owner`, runs whenever `owner` does, once: a `with` body (not an override map,
    whose block must not define functions) or a `try` body."""
    if isinstance(owner, cst.With):
        return owner.body is block and not any(is_map_call(item.item) for item in owner.items)
    return isinstance(owner, cst.Try) and owner.body is block


_BLOCK_WORDS: dict[type, str] = {
    cst.For: "a `for` loop, which would register it again on each pass",
    cst.While: "a `while` loop, which would register it again on each pass",
    cst.If: "an `if` statement with an `else` or `elif`, which may not run it",
    cst.Else: "an `else` clause, which may not run it",
    cst.ExceptHandler: "an `except` clause, which may not run it",
    cst.Finally: "a `finally` clause",
    cst.ClassDef: "a class body",
    cst.With: "an override map's `with` block",
}


def _block_words(owner: cst.CSTNode | None) -> str:
    """A compound statement as users call it (never a syntax-tree class name)."""
    return next((words for kind, words in _BLOCK_WORDS.items() if isinstance(owner, kind)), "a compound statement")


def check_uses(ctx: ModuleContext, reg: Registration) -> None:
    """Refuse a registration whose uses cannot share one rewritten function."""
    if reg.problem is not None or reg.fn is None or reg.kept:
        return
    if not reg.uses:
        reg.refuse(f"gradient {reg.shown} is used by no override map in this file that the rewriter can follow: "
                   "find where it is used and rewrite that op as a @tf.custom_gradient by hand")
        return
    bad = next((u for u in reg.uses if u.nest.problem), None)
    if bad is not None:
        reg.refuse(f"an override map using gradient {reg.shown} is not rewritten (see the TODO there): fix that, "
                   "or rewrite both by hand")
        return
    if len({u.signature for u in reg.uses}) > 1 or len({u.op_type for u in reg.uses}) > 1:
        reg.refuse(f"gradient {reg.shown} overrides different ops or op calls ("
                   + ", ".join(sorted({ctx.code(u.call.func) for u in reg.uses})) + "): write one "
                   "@tf.custom_gradient per op by hand")
        return
    fn_scope = ctx.scopes.get(reg.fn)
    if isinstance(fn_scope, meta.ClassScope):
        reg.refuse(f"`{reg.fn.name.value}` is defined in a class body: rewrite by hand")
        return
    stateful = nondeterministic_call(ctx, reg.uses[0].call)
    if stateful and reads_outputs_differentiably(reg.fn.body, reg.fn.params.params[0].name.value):
        reg.refuse(f"`{reg.fn.name.value}` reads op.outputs, so its second-order gradients go through it again; "
                   f"the rewrite would recompute the output, but {stateful}: a second call could give another value, "
                   "rewrite by hand, keeping second-order gradients through the custom gradient")
        return
    for use in reg.uses:
        if not _visible(ctx, fn_scope, use.call) or (
                not isinstance(fn_scope, meta.GlobalScope) and ctx.line(use.call) < ctx.line(reg.fn)):
            reg.refuse(f"an override map using gradient {reg.shown} is not where `{reg.fn.name.value}` is "
                       "visible: rewrite by hand")
            return
    n_inputs = len(reg.uses[0].wrapper.inputs)
    n_grads = len(reg.fn.params.params) - 1
    if n_grads != 1 and not isinstance(reg.fn.params.star_arg, cst.Param):
        reg.refuse(f"`{reg.fn.name.value}` takes {n_grads} upstream gradients for a one-output op: rewrite by hand")
        return
    mapped = map_gradient_body(reg.fn.body, reg.fn.params.params[0].name.value, ["_x"] * n_inputs, ["_y"],
                               op_reads(reg.uses[0], ["_x"] * n_inputs))
    if isinstance(mapped, Refused):
        reg.refuse(f"{mapped.reason}: rewrite `{reg.fn.name.value}` by hand")


def _visible(ctx: ModuleContext, scope: meta.Scope | None, node: cst.CSTNode) -> bool:
    current = ctx.scopes.get(node)
    while current is not None:
        if current is scope:
            return True
        parent = current.parent
        current = None if parent is current else parent
    return False


def build(ctx: ModuleContext, reg: Registration, tf: str, updated: cst.FunctionDef) -> cst.FunctionDef:
    """The tf.custom_gradient replacing `updated` (the gradient function, after other edits inside it)."""
    use = reg.uses[0]
    params = updated.params
    op = params.params[0].name.value
    upstream = params.with_changes(params=params.params[1:])
    upstream_names = {p.name.value for p in params.params[1:]}
    if isinstance(params.star_arg, cst.Param):
        upstream_names.add(params.star_arg.name.value)
    avoid = names_in(updated.body) | upstream_names | {op} | use.other_names()
    adopted = {k: v for k, v in adoptable_names(updated.body, op).items() if v not in use.other_names()}
    taken: set[str] = set()
    inputs = []
    for i in range(len(use.wrapper.inputs)):
        name = adopted.get(("inputs", i)) or local_fresh("x" if len(use.wrapper.inputs) == 1 else f"x{i}",
                                                         avoid | taken)
        taken.add(name)
        inputs.append(name)
    # op.outputs[0] is the op's own output: differentiating it again goes through this gradient, so a read that
    # second-order gradients can flow through calls the new function again (a plain `y` would bypass it).
    reinvoke = reads_outputs_differentiably(updated.body, op)
    y = (None if reinvoke else adopted.get(("outputs", 0))) or local_fresh("y", avoid | taken)
    # The legacy function keeps its name as the inner gradient function, unless its body reads that name.
    legacy = updated.name.value
    inner = legacy if legacy not in avoid | taken | {y} else local_fresh("grad", avoid | taken | {y})
    output = f"{reg.new_name}({', '.join(inputs)})" if reinvoke else y
    body = map_gradient_body(updated.body, op, inputs, [output], op_reads(use, inputs))
    assert not isinstance(body, Refused), body
    forward = _forward_call(ctx, use, inputs)
    template = (f"@{tf}.custom_gradient\n"
                f"def {reg.new_name}({', '.join(inputs)}):\n"
                f"    {y} = {forward}\n\n"
                f"    def {inner}({ctx.module.code_for_node(upstream)}):\n"
                f"        pass\n\n"
                f"    return {y}, {inner}\n")
    new = cst.parse_statement(template, config=ctx.module.config_for_parsing)
    assert isinstance(new, cst.FunctionDef) and isinstance(new.body, cst.IndentedBlock)
    inner_def = new.body.body[1]
    assert isinstance(inner_def, cst.FunctionDef)
    statements = list(new.body.body)
    statements[1] = inner_def.with_changes(body=body.with_changes(footer=()))
    statements[2] = statements[2].with_changes(leading_lines=[cst.EmptyLine(indent=False)])
    return new.with_changes(body=new.body.with_changes(body=statements), leading_lines=updated.leading_lines)


def op_reads(use: OverrideUse, inputs: list[str]) -> dict[str, str]:
    """What a gradient's `op.type` and `op.get_attr(<type attribute>)` are for the op `use` overrides: its op type,
    and the dtype of the input TensorFlow's op definition types with that attribute (`tf_ops.OpWrapper`)."""
    reads = {"type": f"\"{use.op_type}\""}
    for attr, index in use.wrapper.type_attrs:
        reads[attr_key(attr)] = f"{inputs[index]}.dtype"
    return reads


def _forward_call(ctx: ModuleContext, use: OverrideUse, inputs: list[str]) -> str:
    args = list(use.call.args)
    for name, index in zip(inputs, use.tensor_positions(), strict=True):
        args[index] = args[index].with_changes(value=cst.Name(name))
    return ctx.module.code_for_node(use.call.with_changes(args=args))


def new_name(ctx: ModuleContext, reg: Registration) -> str:
    assert reg.fn is not None
    fn = reg.fn.name.value
    lead = "_" if fn.startswith("_") else ""
    return ctx.fresh(f"{lead}{snake(reg.uses[0].op_type)}_with_{snake(fn)}")
