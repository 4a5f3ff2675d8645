"""`@Defun(..., grad_func=...)` / `python_grad_func=...` functions rebuilt as tf.custom_gradient functions.

The forward body stays; its final `return E` becomes `y = E`, followed by the inner `grad` and `return y, grad`.
A `grad_func` (a Defun of `(*inputs, *dys)`) loses its Defun decorator and is called from `grad`; a
`python_grad_func` `(op, *grads)` is inlined into `grad` with `op.inputs` / `op.outputs` mapped.
"""

from __future__ import annotations

import dataclasses
import functools

import libcst as cst
import libcst.metadata as meta

from compat.rewrite.context import ModuleContext
from compat.rewrite.grad_body import (
    Refused,
    assigned_names,
    map_gradient_body,
    reads_outputs_differentiably,
)
from compat.rewrite.names import local_fresh, names_in
from compat.rewrite.plan import Plan
from compat.rewrite.stateful import nondeterministic_call

_HANDLED_KEYWORDS = frozenset({"grad_func", "python_grad_func", "func_name"})


@dataclasses.dataclass
class DefunSite:
    call: cst.Call
    line: int
    pattern: str
    fn: cst.FunctionDef | None = None
    grad: cst.BaseExpression | None = None  # the grad_func / python_grad_func value
    grad_def: cst.FunctionDef | None = None  # its definition in this file
    n_outputs: int = 1
    reinvoke: bool = False  # the gradient reads op.outputs differentiably: read them by calling the function again
    problem: str | None = None

    def refuse(self, reason: str) -> None:
        if self.problem is None:
            self.problem = reason


def _keyword(call: cst.Call, name: str) -> cst.Arg | None:
    return next((a for a in call.args if a.keyword is not None and a.keyword.value == name), None)


def find_defuns(ctx: ModuleContext) -> list[DefunSite]:
    """Defun calls with a gradient, analysed."""
    sites = []
    for node in ctx.walk(ctx.module):
        if not (isinstance(node, cst.Call) and ctx.tf_leaf(node.func) == "Defun"):
            continue
        grad = _keyword(node, "grad_func") or _keyword(node, "python_grad_func")
        if grad is None:
            continue
        python = grad.keyword is not None and grad.keyword.value == "python_grad_func"
        site = DefunSite(node, ctx.line(node), "defun_python_grad_func" if python else "defun_grad_func",
                         grad=grad.value)
        _analyse(ctx, site, python)
        sites.append(site)
    _shared_grad_funcs(ctx, sites)
    return sites


def _analyse(ctx: ModuleContext, site: DefunSite, python: bool) -> None:
    call = site.call
    decorator = ctx.parent(call)
    fn = ctx.parent(decorator) if isinstance(decorator, cst.Decorator) else None
    if not isinstance(fn, cst.FunctionDef):
        site.refuse("Defun(...) is applied as a call, not as a decorator: make it a decorator, or rewrite by hand")
        return
    site.fn = fn
    name = fn.name.value
    _check_call_sites(ctx, site, fn)
    for arg in call.args:
        if arg.keyword is None:
            continue
        if arg.keyword.value == "shape_func":
            site.refuse(f"`{name}` sets its output shapes with shape_func, which tf.custom_gradient has no "
                        "equivalent for: check the shapes the forward computes, then rewrite by hand")
        elif arg.keyword.value not in _HANDLED_KEYWORDS:
            site.refuse(f"`{name}` passes Defun({arg.keyword.value}=...), whose effect the rewriter does not "
                        "reproduce: rewrite by hand")
        if arg.keyword.value in ("grad_func", "python_grad_func") and arg.value is not site.grad:
            site.refuse(f"`{name}` passes both grad_func and python_grad_func: rewrite by hand")
    dtypes = [a for a in call.args if a.keyword is None]
    params = fn.params
    if len(fn.decorators) != 1:
        site.refuse(f"`{name}` has other decorators besides Defun: rewrite by hand")
    if (isinstance(params.star_arg, cst.Param | cst.ParamStar) or params.star_kwarg is not None or params.kwonly_params
            or params.posonly_params or any(p.default is not None for p in params.params)
            or any(a.star for a in dtypes) or len(dtypes) != len(params.params)):
        site.refuse(f"`{name}` does not declare one dtype per plain parameter: rewrite by hand")
        return
    body = fn.body
    last = body.body[-1] if isinstance(body, cst.IndentedBlock) and body.body else None
    final = (last.body[0] if isinstance(last, cst.SimpleStatementLine) and len(last.body) == 1
             and isinstance(last.body[0], cst.Return) and last.body[0].value is not None else None)
    returns = [n for n in ctx.walk(body, skip_functions=True) if isinstance(n, cst.Return | cst.Yield)]
    if final is None or returns != [final]:
        site.refuse(f"`{name}` does not end in its only `return <outputs>`: rewrite by hand")
        return
    rebound = sorted(assigned_names(body) & {p.name.value for p in params.params})
    if rebound:
        site.refuse(f"`{name}` reassigns its input {', '.join(rebound)}, which the gradient also reads: "
                    "rename it, or rewrite by hand")
    _analyse_grad(ctx, site, python, len(params.params), final)


def _check_call_sites(ctx: ModuleContext, site: DefunSite, fn: cst.FunctionDef) -> None:
    """Refuse a Defun used other than called with positional tensors: the rewrite would break that use.

    A Defun call takes `name=` (the op's name) and a Defun has attributes (`.name`, `.definition`,
    `.add_to_graph`...); a tf.custom_gradient function has neither, and a Defun passed on may be used so.
    """
    name = fn.name.value
    for ref in sorted(_references(ctx, fn), key=lambda node: (ctx.line(node), ctx.positions[node].start.column)):
        parent = ctx.parent(ref)
        if isinstance(parent, cst.Call) and parent.func is ref:
            keywords = [a for a in parent.args if a.keyword is not None or a.star == "**"]
            if not keywords:
                continue
            shown = ", ".join(ctx.code(a).rstrip(", ") for a in keywords)
            site.refuse(f"`{name}` is called with `{shown}`, which a tf.custom_gradient function does not take: "
                        "drop it (use tf.name_scope for a name), or rewrite by hand")
        elif isinstance(parent, cst.Attribute) and parent.value is ref:
            site.refuse(f"`{name}.{parent.attr.value}` reads an attribute of the Defun, which a "
                        "tf.custom_gradient function does not have: rewrite that use, or rewrite by hand")
        else:
            site.refuse(f"`{name}` is used as a value in `{_first_line(ctx, ref)}`, where it may be used as a "
                        "Defun (attributes, `name=`): check that use, or rewrite by hand")
        return


def _first_line(ctx: ModuleContext, node: cst.CSTNode) -> str:
    """The first line of the statement holding `node`, without the comments above it."""
    statement = ctx.statement(node)
    code = ctx.code(statement.with_changes(leading_lines=()) if hasattr(statement, "leading_lines") else statement)
    return code.strip().splitlines()[0][:80]


def _analyse_grad(ctx: ModuleContext, site: DefunSite, python: bool, n_inputs: int, final: cst.Return) -> None:
    grad = site.grad
    assert grad is not None
    kind = "python_grad_func" if python else "grad_func"
    grad_def = None
    if isinstance(grad, cst.Name):
        assignment = ctx.single_assignment(grad)
        grad_def = assignment.node if assignment is not None else None
    if python and isinstance(grad, cst.Lambda):
        params = grad.params
    elif isinstance(grad_def, cst.FunctionDef):
        site.grad_def = grad_def
        params = grad_def.params
    else:
        site.refuse(f"the {kind} `{ctx.code(grad)}` is not a function defined in this file: rewrite by hand")
        return
    if params.star_kwarg is not None or params.kwonly_params or any(p.default is not None for p in params.params):
        site.refuse(f"the {kind} `{ctx.code(grad)}` does not have a plain signature: rewrite by hand")
        return
    n_params = len(params.params)
    if python:
        site.n_outputs = n_params - 1
    else:
        site.n_outputs = n_params - n_inputs
        assert isinstance(grad_def, cst.FunctionDef)
        defun = _defun_decorator(ctx, grad_def)
        if defun is None or len(grad_def.decorators) != 1 or _keyword(defun, "grad_func") or _keyword(
                defun, "python_grad_func"):
            site.refuse(f"the grad_func `{ctx.code(grad)}` is not a plain @Defun function: rewrite by hand")
            return
    if isinstance(params.star_arg, cst.Param | cst.ParamStar) or site.n_outputs < 1:
        site.refuse(f"the {kind} `{ctx.code(grad)}` does not take one gradient per output: rewrite by hand")
        return
    value = final.value
    if isinstance(value, cst.Tuple | cst.List) and any(isinstance(e, cst.StarredElement) for e in value.elements):
        site.refuse(f"`{site.fn.name.value if site.fn else '?'}` returns `{ctx.code(value)}`, whose number of "
                    "outputs is not known statically: rewrite by hand")
        return
    if isinstance(value, cst.Tuple | cst.List) and len(value.elements) != site.n_outputs:
        site.refuse(f"`{site.fn.name.value if site.fn else '?'}` returns {len(value.elements)} outputs but its "
                    f"{kind} takes {site.n_outputs} gradients: rewrite by hand")
        return
    if python:
        body = grad.body if isinstance(grad, cst.Lambda) else grad_def.body  # type: ignore[union-attr]
        op = params.params[0].name.value if params.params else None
        mapped = map_gradient_body(body, op, ["_x"] * n_inputs, ["_y"] * site.n_outputs)
        if isinstance(mapped, Refused):
            site.refuse(f"{mapped.reason}: rewrite `{ctx.code(grad)}` by hand")
            return
        site.reinvoke = reads_outputs_differentiably(body, op)
        if site.reinvoke:
            _check_reinvocable(ctx, site, body)


def _check_reinvocable(ctx: ModuleContext, site: DefunSite, grad_body: cst.CSTNode) -> None:
    """The rewrite reads op.outputs as `fn(*inputs)`: a second call that must give the same value, by that name.

    In TF1 op.outputs[j] is the Defun's own output, whose gradient is this python_grad_func again; a plain forward
    tensor would be differentiated by autodiff, changing second-order gradients.
    """
    fn = site.fn
    assert fn is not None
    name = fn.name.value
    why = (f"`{name}`'s gradient reads op.outputs, whose second-order gradients go through that gradient again; "
           f"the rewrite keeps this by calling `{name}` again from its gradient, ")
    stateful = nondeterministic_call(ctx, fn.body)
    scope = ctx.scopes.get(fn)
    bindings = [a for a in scope[name] if isinstance(a, meta.Assignment)] if scope is not None else []
    if stateful:
        site.refuse(why + f"but {stateful}: a second call could give another value, rewrite by hand")
    elif isinstance(scope, meta.ClassScope) or len(bindings) != 1 or name in names_in(fn.body) | names_in(
            grad_body):
        site.refuse(why + f"but `{name}` is defined in a class body, rebound, or shadowed there: rewrite by hand")


def _defun_decorator(ctx: ModuleContext, fn: cst.FunctionDef) -> cst.Call | None:
    for decorator in fn.decorators:
        if isinstance(decorator.decorator, cst.Call) and ctx.tf_leaf(decorator.decorator.func) == "Defun":
            return decorator.decorator
    return None


def _references(ctx: ModuleContext, fn: cst.FunctionDef) -> set[cst.CSTNode]:
    scope = ctx.scopes.get(fn)
    return {r.node for a in (scope[fn.name.value] if scope else ()) for r in a.references}


def _shared_grad_funcs(ctx: ModuleContext, sites: list[DefunSite]) -> None:
    """A grad_func loses its Defun decorator only if every use is a grad_func= of a Defun being rewritten."""
    for site in sites:
        if site.pattern != "defun_grad_func" or site.grad_def is None or site.problem:
            continue
        users = [s for s in sites if s.grad_def is site.grad_def]
        refs = _references(ctx, site.grad_def)
        if len(refs) != len(users) or any(s.problem for s in users):
            site.refuse(f"the grad_func `{site.grad_def.name.value}` is also used elsewhere: rewrite by hand")


def plan_defuns(ctx: ModuleContext, sites: list[DefunSite], plan: Plan) -> None:
    stripped: set[int] = set()
    inlined: dict[int, int] = {}
    for site in sites:
        if site.problem is not None or site.fn is None:
            anchor = site.fn if site.fn is not None else ctx.statement(site.call)
            plan.todo(anchor, site.line, site.pattern, site.problem or "rewrite by hand")
            continue
        plan.replace(site.fn, functools.partial(_build_one, ctx, site, plan.tf_alias))
        plan.rewritten(site.line, site.pattern, f"@{plan.tf_alias}.custom_gradient {site.fn.name.value}")
        grad_def = site.grad_def
        if grad_def is None:
            continue
        if site.pattern == "defun_grad_func" and id(grad_def) not in stripped:
            stripped.add(id(grad_def))
            plan.replace(grad_def, _strip_defun)
        elif site.pattern == "defun_python_grad_func":
            inlined[id(grad_def)] = inlined.get(id(grad_def), 0) + 1
            if inlined[id(grad_def)] == len(_references(ctx, grad_def)):
                plan.remove(grad_def)


def _strip_defun(updated: cst.CSTNode) -> list[cst.BaseStatement]:
    assert isinstance(updated, cst.FunctionDef)
    decorator = updated.decorators[0]
    comments = [cst.EmptyLine(comment=c) for c in _comments_in(decorator)]
    return [updated.with_changes(decorators=[], leading_lines=[*updated.leading_lines, *decorator.leading_lines,
                                                               *comments])]


def _comments_in(node: cst.CSTNode) -> list[cst.Comment]:
    return [n for n in ModuleContext.walk(node) if isinstance(n, cst.Comment)]


def _as_called(value: cst.BaseExpression) -> cst.BaseExpression:
    """What calling the Defun gives for `return value`: one output's tensor itself, several outputs as a tuple.

    TF1 unpacks a single output (`return (y,)` gives `y`) and returns several as a tuple; tf.custom_gradient
    returns what the function returns.
    """
    if not isinstance(value, cst.Tuple | cst.List):
        return value
    if len(value.elements) == 1:
        return value.elements[0].value
    if isinstance(value, cst.List):
        return cst.Tuple(elements=value.elements,
                         lpar=[cst.LeftParen(whitespace_after=value.lbracket.whitespace_after)],
                         rpar=[cst.RightParen(whitespace_before=value.rbracket.whitespace_before)])
    return value


def _build_one(ctx: ModuleContext, site: DefunSite, tf: str, updated: cst.CSTNode) -> list[cst.BaseStatement]:
    return [_build(ctx, site, tf, updated)]


def _build(ctx: ModuleContext, site: DefunSite, tf: str, updated: cst.CSTNode) -> cst.FunctionDef:
    assert isinstance(updated, cst.FunctionDef) and isinstance(updated.body, cst.IndentedBlock)
    grad = site.grad
    inputs = [p.name.value for p in updated.params.params]
    grad_body_source: cst.CSTNode = grad.body if isinstance(grad, cst.Lambda) else (
        site.grad_def.body if site.pattern == "defun_python_grad_func" and site.grad_def else cst.Name("_"))
    # Names the new body reads besides the moved code's: the grad_func it calls, the function it calls again.
    called = {site.grad_def.name.value} if site.pattern == "defun_grad_func" and site.grad_def else set()
    called |= {updated.name.value} if site.reinvoke else set()
    avoid = names_in(updated.body) | names_in(grad_body_source) | set(inputs) | called
    y = local_fresh("y", avoid)
    legacy = site.grad_def.name.value if site.pattern == "defun_python_grad_func" and site.grad_def else None
    inner = legacy if legacy and legacy not in avoid | {y} else local_fresh("grad", avoid | {y})
    output = f"{updated.name.value}({', '.join(inputs)})" if site.reinvoke else y
    outputs = [output] if site.n_outputs == 1 else [f"{output}[{j}]" for j in range(site.n_outputs)]
    if site.pattern == "defun_grad_func":
        assert site.grad_def is not None
        dys = [local_fresh("dy" if site.n_outputs == 1 else f"dy{j}", avoid | {y, inner})
               for j in range(site.n_outputs)]
        signature = ", ".join(dys)
        body: cst.IndentedBlock | Refused = cst.IndentedBlock(body=[cst.parse_statement(
            f"return {site.grad_def.name.value}({', '.join(inputs + dys)})\n")])
    else:
        params = grad.params if isinstance(grad, cst.Lambda) else site.grad_def.params  # type: ignore[union-attr]
        op = params.params[0].name.value
        upstream = params.with_changes(params=params.params[1:])
        signature = ctx.module.code_for_node(upstream)
        body = map_gradient_body(grad_body_source, op, inputs, outputs)  # type: ignore[arg-type]
    assert not isinstance(body, Refused), body
    last = updated.body.body[-1]
    assert isinstance(last, cst.SimpleStatementLine) and isinstance(last.body[0], cst.Return)
    value = last.body[0].value
    assert value is not None
    tail = cst.parse_module(
        f"def {inner}({signature}):\n    pass\n\nreturn {y}, {inner}\n", config=ctx.module.config_for_parsing).body
    inner_def = tail[0]
    assert isinstance(inner_def, cst.FunctionDef)
    forward_output = cst.SimpleStatementLine(
        body=[cst.Assign(targets=[cst.AssignTarget(cst.Name(y))], value=_as_called(value))],
        leading_lines=last.leading_lines, trailing_whitespace=last.trailing_whitespace)
    blank = [cst.EmptyLine(indent=False)]
    statements = [*updated.body.body[:-1], forward_output,
                  inner_def.with_changes(body=body.with_changes(footer=()), leading_lines=blank),
                  tail[1].with_changes(leading_lines=blank)]
    decorator = updated.decorators[0]
    moved = {c.value for c in _comments_in(grad)} if isinstance(grad, cst.Lambda) else set()
    comments = [cst.EmptyLine(comment=c) for c in _comments_in(decorator) if c.value not in moved]
    new_decorator = cst.Decorator(cst.parse_expression(f"{tf}.custom_gradient"),
                                  leading_lines=[*decorator.leading_lines, *comments])
    return updated.with_changes(decorators=[new_decorator],
                                body=updated.body.with_changes(body=statements))
