"""`Defun(..., grad_func=...)` / `python_grad_func=...` functions rebuilt as tf.custom_gradient functions.

A decorated Defun keeps its body: its final `return E` becomes `y = E`, followed by the inner `grad` and
`return y, grad`. A Defun applied as a call, `f = Defun(...)(_f)`, becomes a tf.custom_gradient function `f`
whose forward calls `_f`, left as it is. A `grad_func` (a Defun of `(*inputs, *dys)`) loses its Defun decorator
and is called from `grad`; a `python_grad_func` `(op, *grads)` is inlined into `grad` with `op.inputs` /
`op.outputs` mapped. A `shape_func` becomes `tf.ensure_shape` on the outputs it gives a shape the forward does not
already keep (`defun_build.py` writes the new code).
"""

from __future__ import annotations

import dataclasses
import functools

import libcst as cst
import libcst.metadata as meta

from compat.rewrite.context import ModuleContext
from compat.rewrite.defun_build import build_applied, build_decorated, returned_values, strip_defun
from compat.rewrite.grad_body import Refused, assigned_names, map_gradient_body, reads_outputs_differentiably
from compat.rewrite.names import names_in
from compat.rewrite.plan import Plan
from compat.rewrite.stateful import nondeterministic_call

# Defun keywords that change no value: func_name and out_names name the function and its outputs in the graph,
# noinline only keeps TF1's graph optimizer from inlining the function's body.
DROPPED_KEYWORDS = ("func_name", "out_names", "noinline")
_GRADIENT_KEYWORDS = ("grad_func", "python_grad_func")


@dataclasses.dataclass
class DefunSite:
    call: cst.Call
    line: int
    pattern: str
    name: str = "?"  # what the Defun is called by: the decorated function's name, or `f` in `f = Defun(...)(_f)`
    fn: cst.FunctionDef | None = None  # the forward: the decorated function, or `_f`
    applied: cst.SimpleStatementLine | None = None  # `f = Defun(...)(_f)`, replaced by the new function
    binding: cst.CSTNode | None = None  # the node binding `name`: the FunctionDef, or the Name `f`
    grad: cst.BaseExpression | None = None  # the grad_func / python_grad_func value
    grad_def: cst.FunctionDef | None = None  # its definition in this file
    n_outputs: int | None = 1  # None: only known when it runs (a forward over `*args`, a gradient `(op, *dys)`)
    star: str | None = None  # `args` of a forward `def f(*args)`
    unpack: bool = False  # the decorated forward returns a sequence, not a literal: unpacked as TF1 does when it runs
    reinvoke: bool = False  # the gradient reads op.outputs differentiably: read them by calling the function again
    shape_func: tuple[str, cst.BaseExpression] | None = None  # (its op parameter, the shapes it returns)
    dropped: tuple[str, ...] = ()  # keywords left out because they change no value
    problem: str | None = None

    def refuse(self, reason: str) -> None:
        if self.problem is None:
            self.problem = reason

    @property
    def bound(self) -> list[str]:
        """The names the forward's parameters bind."""
        plain = [p.name.value for p in self.fn.params.params] if self.fn is not None else []
        return plain + ([self.star] if self.star else [])

    @property
    def inputs(self) -> list[str]:
        """The forward's inputs as code passing them on: `x, y`, or `*args`."""
        return [f"*{n}" if n == self.star else n for n in self.bound]


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


def _locate(ctx: ModuleContext, site: DefunSite) -> bool:
    """Find the forward: `@Defun(...) def f` or `f = Defun(...)(_f)` with `_f` a plain function of this file."""
    parent = ctx.parent(site.call)
    if isinstance(parent, cst.Decorator):
        fn = ctx.parent(parent)
        if isinstance(fn, cst.FunctionDef):
            site.fn, site.name, site.binding = fn, fn.name.value, fn
            if len(fn.decorators) != 1:
                site.refuse(f"`{site.name}` has other decorators besides Defun: rewrite by hand")
            return True
    statement = ctx.statement(site.call)
    assign = statement.body[0] if isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1 else None
    wrapped = parent.args[0].value if isinstance(parent, cst.Call) and parent.func is site.call and len(
        parent.args) == 1 and not parent.args[0].keyword and not parent.args[0].star else None
    if not (isinstance(assign, cst.Assign) and assign.value is parent and wrapped is not None
            and len(assign.targets) == 1 and isinstance(assign.targets[0].target, cst.Name)):
        site.refuse("Defun(...) is applied here other than as a decorator or as `f = Defun(...)(function)`: make "
                    "it a decorator, or rewrite by hand")
        return False
    target = assign.targets[0].target
    assert isinstance(statement, cst.SimpleStatementLine) and isinstance(target, cst.Name)
    site.applied, site.name, site.binding = statement, target.value, target
    if isinstance(wrapped, cst.Name) and wrapped.value == site.name:
        site.refuse(f"`{site.name} = Defun(...)({site.name})` rebinds the function it wraps: rename the function "
                    f"(`def {site.name}_forward`, `{site.name} = Defun(...)({site.name}_forward)`) and run again, or "
                    "rewrite by hand")
        return False
    assignment = ctx.single_assignment(wrapped) if isinstance(wrapped, cst.Name) else None
    fn = assignment.node if assignment is not None else None
    if not isinstance(fn, cst.FunctionDef) or fn.decorators or fn.asynchronous:
        site.refuse(f"`{site.name} = Defun(...)({ctx.code(wrapped)})` wraps something other than a plain function "
                    "defined in this file: rewrite by hand")
        return False
    site.fn = fn
    if len(_bindings(ctx, target, site.name)) != 1:
        site.refuse(f"`{site.name}` is bound more than once: rewrite by hand")
    return True


def _bindings(ctx: ModuleContext, node: cst.CSTNode, name: str) -> list[meta.Assignment]:
    scope = ctx.scopes.get(node)
    return [a for a in scope[name] if isinstance(a, meta.Assignment)] if scope is not None else []


def _analyse(ctx: ModuleContext, site: DefunSite, python: bool) -> None:
    if not _locate(ctx, site):
        return
    fn = site.fn
    assert fn is not None
    name = site.name
    _check_call_sites(ctx, site)
    _check_keywords(ctx, site)
    params = fn.params
    dtypes = [a for a in site.call.args if a.keyword is None]
    # Starred dtypes (`*[tf.float32] * n`) cannot be counted here; TF1 itself raises unless they match.
    if not _varargs(site, python) and (
            isinstance(params.star_arg, cst.Param | cst.ParamStar) or params.star_kwarg is not None
            or params.kwonly_params or params.posonly_params or any(p.default is not None for p in params.params)
            or (dtypes and not any(a.star for a in dtypes) and len(dtypes) != len(params.params))):
        site.refuse(f"`{name}` does not declare one dtype per plain parameter: rewrite by hand")
        return
    alias = ctx.tf_alias()
    if alias is not None and alias in {*site.bound, *(assigned_names(fn.body) if site.applied is None else ())}:
        site.refuse(f"`{fn.name.value}` binds `{alias}` itself, hiding TensorFlow from the code the rewrite puts in "
                    "it: rename it, or rewrite by hand")
        return
    if site.applied is None:
        final = _final_return(ctx, site)
    else:
        final = None
        _check_wrapped_returns(ctx, site)
    if site.problem is not None:
        return
    if site.problem is not None:
        return
    _analyse_grad(ctx, site, python, len(params.params), final)
    shape_func = _keyword(site.call, "shape_func")
    if shape_func is not None and site.problem is None:
        _analyse_shape_func(ctx, site, shape_func.value)
    _check_gradient_names(ctx, site, python)


def _varargs(site: DefunSite, python: bool) -> bool:
    """Whether the forward is `def f(*args)` (nothing else); rewritten only decorated, with a python_grad_func."""
    assert site.fn is not None
    params = site.fn.params
    if not isinstance(params.star_arg, cst.Param) or params.params or params.kwonly_params or params.posonly_params \
            or params.star_kwarg is not None:
        return False
    star = params.star_arg.name.value
    if not python or site.applied is not None:
        site.refuse(f"`{site.name}` takes `*{star}`, rewritten only as a decorated Defun with a python_grad_func (a "
                    "grad_func's parameters do not say which are inputs and which gradients): rewrite by hand")
    site.star = star
    return True


def _indexed_input(ctx: ModuleContext, body: cst.CSTNode, op: str) -> str | None:
    """The first `op.inputs[<integer>]` in `body`: a forward over `*args` has no parameter to map it to."""
    for node in ctx.walk(body):
        if (isinstance(node, cst.Subscript) and isinstance(node.value, cst.Attribute)
                and isinstance(node.value.value, cst.Name) and node.value.value.value == op
                and node.value.attr.value == "inputs" and len(node.slice) == 1
                and isinstance(node.slice[0].slice, cst.Index) and isinstance(node.slice[0].slice.value, cst.Integer)):
            return ctx.code(node)
    return None


def _sequence_count(value: cst.BaseExpression) -> int | None:
    """How many outputs `return value` gives when it is a literal tuple or list; else None."""
    if isinstance(value, cst.Tuple | cst.List) and not any(isinstance(e, cst.StarredElement) for e in value.elements):
        return len(value.elements)
    return None


def _is_sequence(ctx: ModuleContext, value: cst.BaseExpression) -> bool:
    """`value` is a tuple or list whatever it holds: a literal, a comprehension, `tuple(...)` or `list(...)`."""
    return isinstance(value, cst.Tuple | cst.List | cst.ListComp) or (
        isinstance(value, cst.Call) and isinstance(value.func, cst.Name) and value.func.value in ("tuple", "list")
        and ctx.single_assignment(value.func) is None and len(value.args) == 1 and not value.args[0].keyword)


def _check_keywords(ctx: ModuleContext, site: DefunSite) -> None:
    handled = {*_GRADIENT_KEYWORDS, *DROPPED_KEYWORDS, "shape_func"}
    for arg in site.call.args:
        if arg.keyword is None:
            if arg.star == "**":
                site.refuse(f"`{site.name}` passes Defun(**{ctx.code(arg.value)}), whose keywords the rewriter "
                            "cannot see: rewrite by hand")
            continue
        keyword = arg.keyword.value
        if keyword not in handled:
            site.refuse(f"`{site.name}` passes Defun({keyword}=...), whose effect the rewriter does not "
                        "reproduce: rewrite by hand")
        elif keyword in _GRADIENT_KEYWORDS and arg.value is not site.grad:
            site.refuse(f"`{site.name}` passes both grad_func and python_grad_func: rewrite by hand")
        elif keyword in DROPPED_KEYWORDS:
            site.dropped += (keyword,)


def _final_return(ctx: ModuleContext, site: DefunSite) -> cst.Return | None:
    """A decorated forward's last statement `return <outputs>`, its only return; else refused."""
    assert site.fn is not None
    body = site.fn.body
    last = body.body[-1] if isinstance(body, cst.IndentedBlock) and body.body else None
    final = (last.body[0] if isinstance(last, cst.SimpleStatementLine) and len(last.body) == 1
             and isinstance(last.body[0], cst.Return) and last.body[0].value is not None else None)
    returns = [n for n in ctx.walk(body, skip_functions=True) if isinstance(n, cst.Return | cst.Yield)]
    if final is None or returns != [final]:
        site.refuse(f"`{site.name}` does not end in its only `return <outputs>`: rewrite by hand")
        return None
    rebound = sorted(assigned_names(body) & set(site.bound))
    if rebound:
        site.refuse(f"`{site.name}` reassigns its input {', '.join(rebound)}, which the gradient also reads: "
                    "rename it, or rewrite by hand")
    return final


def _check_wrapped_returns(ctx: ModuleContext, site: DefunSite) -> None:
    """The wrapped `_f` of `f = Defun(...)(_f)` returns a value everywhere (counted against the gradient later)."""
    assert site.fn is not None
    returns = [n for n in ctx.walk(site.fn.body, skip_functions=True) if isinstance(n, cst.Return | cst.Yield)]
    if not returns or any(not isinstance(r, cst.Return) or r.value is None for r in returns):
        site.refuse(f"`{site.fn.name.value}`, which `{site.name}` wraps, does not return its outputs with `return "
                    "<outputs>` everywhere: rewrite by hand")


def _check_call_sites(ctx: ModuleContext, site: DefunSite) -> None:
    """Refuse a Defun used other than called with positional tensors: the rewrite would break that use.

    A Defun call takes `name=` (the op's name) and a Defun has attributes (`.name`, `.definition`,
    `.add_to_graph`...); a tf.custom_gradient function has neither, and a Defun passed on may be used so.
    """
    name = site.name
    assert site.binding is not None
    for ref in sorted(_references(ctx, site.binding, name),
                      key=lambda node: (ctx.line(node), ctx.positions[node].start.column)):
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


def _grad_signature(ctx: ModuleContext, site: DefunSite, python: bool) -> cst.Parameters | None:
    """The gradient's parameters (a lambda's or a function's of this file), its definition noted; else refused."""
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
        return None
    if params.star_kwarg is not None or params.kwonly_params or any(p.default is not None for p in params.params):
        site.refuse(f"the {kind} `{ctx.code(grad)}` does not have a plain signature: rewrite by hand")
        return None
    return params


def _analyse_grad(ctx: ModuleContext, site: DefunSite, python: bool, n_inputs: int,
                  final: cst.Return | None) -> None:
    params = _grad_signature(ctx, site, python)
    if params is None:
        return
    grad = site.grad
    assert grad is not None
    kind = "python_grad_func" if python else "grad_func"
    n_params = len(params.params)
    if python:
        site.n_outputs = n_params - 1
    else:
        site.n_outputs = n_params - n_inputs
        assert isinstance(site.grad_def, cst.FunctionDef)
        defun = _defun_decorator(ctx, site.grad_def)
        if defun is None or len(site.grad_def.decorators) != 1 or any(_keyword(defun, k) for k in _GRADIENT_KEYWORDS):
            site.refuse(f"the grad_func `{ctx.code(grad)}` is not a plain @Defun function: rewrite by hand")
            return
    values = [final.value] if final is not None and final.value is not None else returned_values(ctx, site.fn)  # type: ignore[arg-type]
    if site.star is not None and isinstance(params.star_arg, cst.Param) and n_params == 1:
        # `(op, *grads)` for a forward over `*args`: as many gradients as the forward returns outputs.
        site.n_outputs = _sequence_count(values[0])
        if site.n_outputs is None and not _is_sequence(ctx, values[0]):
            site.refuse(f"`{site.name}` takes `*{site.star}` and returns `{ctx.code(values[0])}`, which may be one "
                        "tensor or several: rewrite by hand")
            return
    elif isinstance(params.star_arg, cst.Param | cst.ParamStar) or site.n_outputs is None or site.n_outputs < 1:
        site.refuse(f"the {kind} `{ctx.code(grad)}` does not take one gradient per output: rewrite by hand")
        return
    if not _outputs_match(ctx, site, kind, values):
        return
    site.unpack = site.applied is None and _sequence_count(values[0]) is None and _is_sequence(ctx, values[0])
    if python:
        body = grad.body if isinstance(grad, cst.Lambda) else site.grad_def.body  # type: ignore[union-attr]
        op = params.params[0].name.value if params.params else None
        indexed = _indexed_input(ctx, body, op) if op is not None and site.star is not None else None
        if indexed is not None:
            site.refuse(f"the python_grad_func `{ctx.code(grad)}` reads `{indexed}` of `{site.name}`, which takes "
                        f"`*{site.star}`: read `list({op}.inputs)` instead, or rewrite by hand")
            return
        outputs = None if site.n_outputs is None else ["_y"] * site.n_outputs
        mapped = map_gradient_body(body, op, ["_x"] * n_inputs if site.star is None else ["*_x"], outputs)
        if isinstance(mapped, Refused):
            site.refuse(f"{mapped.reason}: rewrite `{ctx.code(grad)}` by hand")
            return
        site.reinvoke = reads_outputs_differentiably(body, op)
        if site.reinvoke:
            _check_reinvocable(ctx, site, body)


def _outputs_match(ctx: ModuleContext, site: DefunSite, kind: str, values: list[cst.BaseExpression]) -> bool:
    """Every literal `return (a, b)` has one element per gradient the gradient function takes; else refused."""
    literals = [v for v in values if isinstance(v, cst.Tuple | cst.List)]
    for value in literals:
        if any(isinstance(e, cst.StarredElement) for e in value.elements):
            site.refuse(f"`{site.name}` returns `{ctx.code(value)}`, whose number of outputs is not known "
                        "statically: rewrite by hand")
            return False
        if len(value.elements) != site.n_outputs:
            site.refuse(f"`{site.name}` returns {len(value.elements)} outputs but its {kind} takes "
                        f"{site.n_outputs} gradients: rewrite by hand")
            return False
    if site.n_outputs == 1 and literals and len(literals) != len(values):
        site.refuse(f"`{site.fn.name.value if site.fn else '?'}` returns its output both in a tuple and bare: "
                    "rewrite by hand")
        return False
    return True


def _analyse_shape_func(ctx: ModuleContext, site: DefunSite, value: cst.BaseExpression) -> None:
    """`shape_func=lambda op: [shapes]` (or a function of this file returning them): kept as tf.ensure_shape."""
    why = f"`{site.name}` sets its output shapes with shape_func `{ctx.code(value)}`"
    expression: cst.BaseExpression | None = None
    params = None
    if isinstance(value, cst.Lambda):
        params, expression = value.params, value.body
    elif isinstance(value, cst.Name):
        assignment = ctx.single_assignment(value)
        fn = assignment.node if assignment is not None else None
        body = fn.body.body if isinstance(fn, cst.FunctionDef) and isinstance(fn.body, cst.IndentedBlock) else []
        only = body[0].body[0] if len(body) == 1 and isinstance(body[0], cst.SimpleStatementLine) else None
        if isinstance(only, cst.Return) and only.value is not None and isinstance(fn, cst.FunctionDef):
            params, expression = fn.params, only.value
    if expression is None or params is None or len(params.params) != 1 or params.star_arg not in (
            None, cst.MaybeSentinel.DEFAULT) or params.star_kwarg or params.kwonly_params or params.posonly_params:
        site.refuse(f"{why}, which is neither a lambda nor a function of this file made of one `return`: "
                    "rewrite by hand")
        return
    op = params.params[0].name.value
    indexed = _indexed_input(ctx, expression, op) if site.star is not None else None
    if indexed is not None:
        site.refuse(f"{why}, which reads `{indexed}` of a Defun over `*{site.star}`: rewrite by hand")
        return
    mapped = map_gradient_body(expression, op, site.inputs, None)
    if isinstance(mapped, Refused):
        site.refuse(f"{why}; that shape_func{mapped.reason.removeprefix('the gradient function')}: rewrite by hand")
        return
    if isinstance(expression, cst.List | cst.Tuple) and (
            any(isinstance(e, cst.StarredElement) for e in expression.elements)
            or (site.n_outputs is not None and len(expression.elements) != site.n_outputs)):
        site.refuse(f"{why}, which does not give one shape per output ({site.n_outputs}): rewrite by hand")
        return
    site.shape_func = (op, expression)


def _check_gradient_names(ctx: ModuleContext, site: DefunSite, python: bool) -> None:
    """Refuse when the moved gradient (or shape_func) reads a name the forward binds: inside the new function,
    it would read the forward's value instead of its own."""
    if site.problem is not None or site.fn is None:
        return
    forward = set(site.bound) | (assigned_names(site.fn.body) if site.applied is None else set())
    grad = site.grad
    assert grad is not None
    reads: list[tuple[str, set[str]]] = []
    shown_grad = f"the {'python_grad_func' if python else 'grad_func'} `{ctx.code(grad)}`"
    if python and isinstance(grad, cst.Lambda):
        reads.append((shown_grad, names_in(grad.body) - {p.name.value for p in grad.params.params}))
    elif python and site.grad_def is not None:
        body = site.grad_def.body
        reads.append((shown_grad, names_in(body) - {p.name.value for p in site.grad_def.params.params}
                      - assigned_names(body)))
    elif site.grad_def is not None:
        reads.append((f"call of {shown_grad}", {site.grad_def.name.value}))
    shape_func = _keyword(site.call, "shape_func")
    if site.shape_func is not None and shape_func is not None:
        reads.append((f"the shape_func `{ctx.code(shape_func.value)}`",
                      names_in(site.shape_func[1]) - {site.shape_func[0]}))
    for what, names in reads:
        clash = sorted(names & forward)
        if clash:
            shown = ", ".join(f"`{n}`" for n in clash)
            site.refuse(f"{what} reads {shown}, which `{site.fn.name.value}` also binds: moved into the new "
                        f"function it would read `{site.fn.name.value}`'s own {shown}; rename one of them, or "
                        "rewrite by hand")


def _check_reinvocable(ctx: ModuleContext, site: DefunSite, grad_body: cst.CSTNode) -> None:
    """The rewrite reads op.outputs as `fn(*inputs)`: a second call that must give the same value, by that name.

    In TF1 op.outputs[j] is the Defun's own output, whose gradient is this python_grad_func again; a plain forward
    tensor would be differentiated by autodiff, changing second-order gradients.
    """
    fn = site.fn
    assert fn is not None and site.binding is not None
    name = site.name
    why = (f"`{name}`'s gradient reads op.outputs, whose second-order gradients go through that gradient again; "
           f"the rewrite keeps this by calling `{name}` again from its gradient, ")
    stateful = nondeterministic_call(ctx, fn.body)
    scope = ctx.scopes.get(site.binding)
    if stateful:
        site.refuse(why + f"but {stateful}: a second call could give another value, rewrite by hand")
    elif isinstance(scope, meta.ClassScope) or len(_bindings(ctx, site.binding, name)) != 1 or name in names_in(
            fn.body) | names_in(grad_body) | set(site.bound):
        site.refuse(why + f"but `{name}` is defined in a class body, rebound, or shadowed there: rewrite by hand")


def _defun_decorator(ctx: ModuleContext, fn: cst.FunctionDef) -> cst.Call | None:
    for decorator in fn.decorators:
        if isinstance(decorator.decorator, cst.Call) and ctx.tf_leaf(decorator.decorator.func) == "Defun":
            return decorator.decorator
    return None


def _references(ctx: ModuleContext, binding: cst.CSTNode, name: str) -> set[cst.CSTNode]:
    scope = ctx.scopes.get(binding)
    return {r.node for a in (scope[name] if scope else ()) for r in a.references}


def _shared_grad_funcs(ctx: ModuleContext, sites: list[DefunSite]) -> None:
    """A grad_func loses its Defun decorator only if every use is a grad_func= of a Defun being rewritten."""
    for site in sites:
        if site.pattern != "defun_grad_func" or site.grad_def is None or site.problem:
            continue
        users = [s for s in sites if s.grad_def is site.grad_def]
        refs = _references(ctx, site.grad_def, site.grad_def.name.value)
        if len(refs) != len(users) or any(s.problem for s in users):
            site.refuse(f"the grad_func `{site.grad_def.name.value}` is also used elsewhere: rewrite by hand")


def _described(site: DefunSite, tf: str) -> str:
    notes = [f"@{tf}.custom_gradient {site.name}"]
    if site.applied is not None and site.fn is not None:
        notes.append(f"calling `{site.fn.name.value}`")
    if site.shape_func is not None:
        notes.append(f"shape_func as {tf}.ensure_shape where the forward does not keep the shape")
    if site.dropped:
        notes.append(", ".join(f"{k}=" for k in site.dropped) + " dropped (no effect on values)")
    return "; ".join(notes)


def plan_defuns(ctx: ModuleContext, sites: list[DefunSite], plan: Plan) -> None:
    stripped: set[int] = set()
    inlined: dict[int, int] = {}
    for site in sites:
        if site.problem is not None or site.fn is None:
            anchor = site.applied or (site.fn if site.fn is not None else ctx.statement(site.call))
            plan.todo(anchor, site.line, site.pattern, site.problem or "rewrite by hand")
            continue
        if site.applied is not None:
            plan.replace(site.applied, functools.partial(build_applied, ctx, site, plan.tf_alias))
        else:
            plan.replace(site.fn, functools.partial(build_decorated, ctx, site, plan.tf_alias))
        plan.rewritten(site.line, site.pattern, _described(site, plan.tf_alias))
        grad_def = site.grad_def
        if grad_def is None:
            continue
        if site.pattern == "defun_grad_func" and id(grad_def) not in stripped:
            stripped.add(id(grad_def))
            plan.replace(grad_def, strip_defun)
        elif site.pattern == "defun_python_grad_func":
            inlined[id(grad_def)] = inlined.get(id(grad_def), 0) + 1
            if inlined[id(grad_def)] == len(_references(ctx, grad_def, grad_def.name.value)):
                plan.remove(grad_def)
