"""The code a Defun site becomes: a tf.custom_gradient function, its inner `grad`, its shapes kept.

`defun.py` decides what is rewritten and records it on a `DefunSite`; the builders here take the updated CST
node the plan replaces and return the new statements.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from compat.rewrite.context import ModuleContext
from compat.rewrite.grad_body import Refused, map_gradient_body
from compat.rewrite.names import local_fresh, local_names, names_in

if TYPE_CHECKING:
    from compat.rewrite.defun import DefunSite


def strip_defun(updated: cst.CSTNode) -> list[cst.BaseStatement]:
    """A grad_func without its @Defun decorator (its comments kept above the function)."""
    assert isinstance(updated, cst.FunctionDef)
    decorator = updated.decorators[0]
    comments = [cst.EmptyLine(comment=c) for c in _comments_in(decorator)]
    return [updated.with_changes(decorators=[], leading_lines=[*updated.leading_lines, *decorator.leading_lines,
                                                               *comments])]


def _comments_in(node: cst.CSTNode) -> list[cst.Comment]:
    return [n for n in ModuleContext.walk(node) if isinstance(n, cst.Comment)]


def returned_values(ctx: ModuleContext, fn: cst.FunctionDef) -> list[cst.BaseExpression]:
    """What each `return` of `fn` (not of functions inside it) returns."""
    return [n.value for n in ctx.walk(fn.body, skip_functions=True) if isinstance(n, cst.Return) and n.value]


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


def _called(ctx: ModuleContext, site: DefunSite) -> cst.BaseExpression:
    """`_f(x)` for `f = Defun(...)(_f)`, as the Defun call gives it: `_f(x)[0]` when `_f` returns `(y,)`, a tuple
    when it returns a list of several outputs."""
    assert site.fn is not None
    call = f"{site.fn.name.value}({', '.join(site.inputs)})"
    values = returned_values(ctx, site.fn)
    if all(isinstance(v, cst.Tuple | cst.List) for v in values) and site.n_outputs == 1:
        call += "[0]"
    elif any(isinstance(v, cst.List) for v in values) and (site.n_outputs or 0) > 1:
        call = f"tuple({call})"
    return cst.parse_expression(call)


def _keeps_input_shape(ctx: ModuleContext, value: cst.BaseExpression, shape: cst.BaseExpression, op: str,
                       inputs: list[str]) -> bool:
    """Whether `value` is an input (or its tf.identity) and `shape` that input's own shape: nothing to enforce."""
    read = shape.func if isinstance(shape, cst.Call) and not shape.args else shape
    if not (isinstance(read, cst.Attribute) and read.attr.value in ("get_shape", "shape")
            and (read.attr.value == "shape") == (read is shape)):
        return False
    tensor = read.value
    index = tensor.slice[0].slice.value if isinstance(tensor, cst.Subscript) and len(tensor.slice) == 1 and isinstance(
        tensor.slice[0].slice, cst.Index) else None
    if not (isinstance(tensor, cst.Subscript) and isinstance(tensor.value, cst.Attribute)
            and isinstance(tensor.value.value, cst.Name) and tensor.value.value.value == op
            and tensor.value.attr.value == "inputs" and isinstance(index, cst.Integer)
            and int(index.value) < len(inputs)):
        return False
    if isinstance(value, cst.Call) and ctx.tf_leaf(value.func) == "identity":
        positional = [a for a in value.args if a.keyword is None]
        value = positional[0].value if len(positional) == 1 and not positional[0].star else value
    return isinstance(value, cst.Name) and value.value == inputs[int(index.value)]


def _shaped(ctx: ModuleContext, site: DefunSite, tf: str, value: cst.BaseExpression,
            avoid: set[str]) -> cst.BaseExpression:
    """The forward's outputs `value` (as the Defun call gives them) with the shape_func's static shapes enforced.

    TF1 sets the shapes shape_func gives on the call's outputs (which otherwise have none); TF2 traces the forward
    and knows its shapes, so an output that is an input with that input's shape needs nothing.
    """
    if site.shape_func is None:
        return value
    op, expression = site.shape_func
    mapped = map_gradient_body(expression, op, site.inputs, None)
    assert not isinstance(mapped, Refused), mapped
    statement = mapped.body[0]
    assert isinstance(statement, cst.SimpleStatementLine) and isinstance(statement.body[0], cst.Return)
    shapes = statement.body[0].value
    assert shapes is not None

    def ensure(tensor: cst.BaseExpression, shape: cst.BaseExpression) -> cst.BaseExpression:
        return cst.Call(func=cst.parse_expression(f"{tf}.ensure_shape"),
                        args=[cst.Arg(tensor, comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))),
                              cst.Arg(shape)])

    single = site.n_outputs == 1 and not site.unpack  # else `value` is a sequence, unpacked after
    if isinstance(shapes, cst.List | cst.Tuple) and isinstance(expression, cst.List | cst.Tuple):
        pairs = list(zip([e.value for e in expression.elements], [e.value for e in shapes.elements], strict=True))
        if single:
            keep = _keeps_input_shape(ctx, value, pairs[0][0], op, site.inputs)
            return value if keep else ensure(value, pairs[0][1])
        if isinstance(value, cst.Tuple):
            return value.with_changes(elements=[
                e.with_changes(value=e.value if _keeps_input_shape(ctx, e.value, original, op, site.inputs)
                               else ensure(e.value, shape))
                for e, (original, shape) in zip(value.elements, pairs, strict=True)])
    code = ctx.module.code_for_node
    if single:
        return ensure(value, cst.parse_expression(f"({code(shapes)})[0]"))
    t, s = local_names(("t", "shape"), avoid | {tf} | names_in(value) | names_in(shapes))
    return cst.parse_expression(f"tuple({tf}.ensure_shape({t}, {s}) for {t}, {s} in zip({code(value)}, "
                                f"{code(shapes)}))")


def _gradient(ctx: ModuleContext, site: DefunSite, tf: str, avoid: set[str]) -> tuple[str, cst.FunctionDef, str]:
    """(the forward output's local name, the inner gradient function, its name).

    A grad_func is a Defun: TF1 converts the gradients it is called with to dense tensors, where a tape may give
    `grad` an IndexedSlices (the output read by tf.gather): the call passes `tf.convert_to_tensor(dy)` likewise.
    A python_grad_func gets the gradients as they are, in TF1 as here.
    """
    grad = site.grad
    inputs = site.inputs
    grad_body_source: cst.CSTNode = grad.body if isinstance(grad, cst.Lambda) else (
        site.grad_def.body if site.pattern == "defun_python_grad_func" and site.grad_def else cst.Name("_"))
    # Names the new body reads besides the moved code's: the grad_func it calls, the function it calls again.
    called = {site.grad_def.name.value} if site.pattern == "defun_grad_func" and site.grad_def else set()
    called |= {site.name} if site.reinvoke else set()
    avoid = avoid | names_in(grad_body_source) | set(inputs) | called
    y = local_fresh("y", avoid)
    legacy = site.grad_def.name.value if site.pattern == "defun_python_grad_func" and site.grad_def else None
    inner = legacy if legacy and legacy not in avoid | {y} else local_fresh("grad", avoid | {y})
    output = f"{site.name}({', '.join(inputs)})" if site.reinvoke else y
    outputs = None if site.n_outputs is None else [output] if site.n_outputs == 1 else [
        f"{output}[{j}]" for j in range(site.n_outputs)]
    if site.pattern == "defun_grad_func":
        assert site.grad_def is not None and site.n_outputs is not None
        dys = [local_fresh("dy" if site.n_outputs == 1 else f"dy{j}", avoid | {y, inner})
               for j in range(site.n_outputs)]
        signature = ", ".join(dys)
        dense = [f"{tf}.convert_to_tensor({dy})" for dy in dys]
        body: cst.IndentedBlock | Refused = cst.IndentedBlock(body=[cst.parse_statement(
            f"return {site.grad_def.name.value}({', '.join(inputs + dense)})\n")])
    else:
        params = grad.params if isinstance(grad, cst.Lambda) else site.grad_def.params  # type: ignore[union-attr]
        op = params.params[0].name.value
        signature = ctx.module.code_for_node(params.with_changes(params=params.params[1:]))
        body = map_gradient_body(grad_body_source, op, inputs, outputs)  # type: ignore[arg-type]
    assert not isinstance(body, Refused), body
    inner_def = cst.parse_statement(f"def {inner}({signature}):\n    pass\n", config=ctx.module.config_for_parsing)
    assert isinstance(inner_def, cst.FunctionDef)
    return y, inner_def.with_changes(body=body.with_changes(footer=())), inner


def _new_function(ctx: ModuleContext, site: DefunSite, tf: str, updated: cst.FunctionDef,
                  before: list[cst.BaseStatement], value: cst.BaseExpression, last: cst.SimpleStatementLine | None,
                  decorator_lines: list[cst.EmptyLine]) -> cst.FunctionDef:
    """`updated` as `@tf.custom_gradient`: `before`, `y = value` (shapes enforced), the inner grad, `return y, grad`."""
    assert isinstance(updated.body, cst.IndentedBlock)
    avoid = names_in(updated.body) | names_in(value)
    y, inner_def, inner = _gradient(ctx, site, tf, avoid | {tf})
    forward_output = cst.SimpleStatementLine(
        body=[cst.Assign(targets=[cst.AssignTarget(cst.Name(y))], value=_shaped(ctx, site, tf, value, avoid))],
        leading_lines=last.leading_lines if last else (), trailing_whitespace=last.trailing_whitespace if last
        else cst.TrailingWhitespace())
    blank = [cst.EmptyLine(indent=False)]
    tail = cst.parse_statement(f"return {y}, {inner}\n", config=ctx.module.config_for_parsing)
    # A forward returning a sequence (not a literal): TF1 gives one output as the tensor itself, several as a tuple.
    unpacked = [] if not site.unpack else [cst.parse_statement(
        f"{y} = {y}[0] if len({y}) == 1 else tuple({y})\n", config=ctx.module.config_for_parsing)]
    statements = [*before, forward_output, *unpacked, inner_def.with_changes(leading_lines=blank),
                  tail.with_changes(leading_lines=blank)]
    new_decorator = cst.Decorator(cst.parse_expression(f"{tf}.custom_gradient"), leading_lines=decorator_lines)
    return updated.with_changes(decorators=[new_decorator], body=updated.body.with_changes(body=statements))


def build_decorated(ctx: ModuleContext, site: DefunSite, tf: str, updated: cst.CSTNode) -> list[cst.BaseStatement]:
    """`@Defun(...) def f` as `@tf.custom_gradient def f`: its body, its final `return E` as `y = E`."""
    assert isinstance(updated, cst.FunctionDef) and isinstance(updated.body, cst.IndentedBlock)
    last = updated.body.body[-1]
    assert isinstance(last, cst.SimpleStatementLine) and isinstance(last.body[0], cst.Return)
    value = last.body[0].value
    assert value is not None
    decorator = updated.decorators[0]
    grad = site.grad
    moved = {c.value for c in _comments_in(grad)} if isinstance(grad, cst.Lambda) else set()
    comments = [cst.EmptyLine(comment=c) for c in _comments_in(decorator) if c.value not in moved]
    return [_new_function(ctx, site, tf, updated, list(updated.body.body[:-1]), _as_called(value), last,
                          [*decorator.leading_lines, *comments])]


def build_applied(ctx: ModuleContext, site: DefunSite, tf: str, updated: cst.CSTNode) -> list[cst.BaseStatement]:
    """`f = Defun(...)(_f)` as `@tf.custom_gradient def f(<_f's parameters>)` whose forward is `_f(...)`."""
    assert isinstance(updated, cst.SimpleStatementLine) and site.fn is not None
    comments = [cst.EmptyLine(comment=c) for c in _comments_in(updated.body[0])]
    if updated.trailing_whitespace.comment is not None:
        comments.append(cst.EmptyLine(comment=updated.trailing_whitespace.comment))
    shell = cst.parse_statement(f"def {site.name}({', '.join(site.inputs)}):\n    pass\n",
                                config=ctx.module.config_for_parsing)
    assert isinstance(shell, cst.FunctionDef)
    return [_new_function(ctx, site, tf, shell, [], _called(ctx, site), None,
                          [*updated.leading_lines, *comments])]
