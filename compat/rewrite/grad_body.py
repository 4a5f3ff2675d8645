"""Turn a legacy gradient body `(op, *grads)` into the inner `grad(*grads)` of a tf.custom_gradient.

`op.inputs[i]` becomes the forward's i-th input and `op.outputs[j]` its j-th output; `op.type` and
`op.get_attr("T")` become what the caller derives from the overridden op (`reads`); any other use of `op`
(`op.get_attr("scale")`, `op.name`, `op.device`, passing `op` on) cannot be mapped and is refused with the reason,
saying what to pass in by hand.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

import libcst as cst

_FIELDS = ("inputs", "outputs")
# What a tf.custom_gradient has no op for, and what to do instead (an attribute of `op` -> the TODO's words).
_NO_OP_READS = {
    "name": "reads op.name, the name TF1 gave the op, which a tf.custom_gradient has no op for: use a fixed name, "
            "or pass in the forward call's `name=`, by hand",
    "device": "reads op.device, the device TF1 placed the op on, which a tf.custom_gradient has no op for: pass "
              "in the device the gradient needs (e.g. an input's `.device`) by hand",
    "node_def": "reads op.node_def, the op's TF1 graph definition, which a tf.custom_gradient has no op for: pass "
                "in the attribute values it reads (from the forward call's arguments) by hand",
    "type": "reads op.type, the type of the op TF1 differentiates: write that op type as a string by hand",
}


def attr_key(name: str) -> str:
    """The `reads` key of `op.get_attr(name)`; `op.type` is "type"."""
    return f"get_attr:{name}"


def _get_attr(node: cst.Call, op: str) -> tuple[str | None] | None:
    """(attribute name or None when computed,) for `op.get_attr(...)`, else None."""
    func = node.func
    if not (isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == op
            and func.attr.value == "get_attr"):
        return None
    arg = node.args[0].value if len(node.args) == 1 and node.args[0].keyword is None else None
    value = arg.evaluated_value if isinstance(arg, cst.SimpleString) else None
    return (value if isinstance(value, str) else None,)


@dataclasses.dataclass(frozen=True)
class Refused:
    """Why a gradient body cannot be moved into a custom_gradient, phrased for a TODO comment."""

    reason: str


def _op_field(node: cst.CSTNode, op: str) -> str | None:
    """`inputs` for `op.inputs`, `outputs` for `op.outputs`, else None."""
    if (isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == op
            and node.attr.value in _FIELDS):
        return node.attr.value
    return None


def _index(node: cst.Subscript) -> int | None:
    if len(node.slice) != 1 or not isinstance(node.slice[0].slice, cst.Index):
        return None
    value = node.slice[0].slice.value
    return int(value.value) if isinstance(value, cst.Integer) else None


def _single_target(stmt: cst.BaseStatement) -> tuple[cst.BaseAssignTargetExpression, cst.BaseExpression] | None:
    if (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Assign)
            and len(stmt.body[0].targets) == 1):
        return stmt.body[0].targets[0].target, stmt.body[0].value
    return None


def binding_names(node: cst.CSTNode) -> list[str]:
    """Names a body binds in its own scope, once per binding (assignments, loop/with targets, imports, defs)."""
    found: list[str] = []

    class _Collect(cst.CSTVisitor):
        def _targets(self, target: cst.CSTNode) -> None:
            if isinstance(target, cst.Name):
                found.append(target.value)
            elif isinstance(target, cst.Tuple | cst.List):
                for element in target.elements:
                    self._targets(element.value)
            elif isinstance(target, cst.StarredElement):
                self._targets(target.value)

        def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
            self._targets(node.target)

        def visit_AugAssign(self, node: cst.AugAssign) -> None:
            self._targets(node.target)

        def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
            self._targets(node.target)

        def visit_For(self, node: cst.For) -> None:
            self._targets(node.target)

        def visit_AsName(self, node: cst.AsName) -> None:
            self._targets(node.name)

        def visit_ImportAlias(self, node: cst.ImportAlias) -> None:
            if node.asname is None:  # `import a.b` binds `a`; `import a.b as c` binds c (visit_AsName)
                found.append(node.evaluated_name.split(".")[0])

        def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
            self._targets(node.target)

        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            found.append(node.name.value)
            return False

        def visit_ClassDef(self, node: cst.ClassDef) -> bool:
            found.append(node.name.value)
            return False

        def visit_Lambda(self, node: cst.Lambda) -> bool:
            return False

    node.visit(_Collect())
    return found


def assigned_names(node: cst.CSTNode) -> set[str]:
    return set(binding_names(node))


def adoptable_names(body: cst.BaseSuite, op: str) -> dict[tuple[str, int], str]:
    """`{("inputs", 0): "x"}` for a top-level `x = op.inputs[0]` (x bound nowhere else): names worth keeping."""
    if not isinstance(body, cst.IndentedBlock):
        return {}
    counts: dict[str, int] = {}
    for name in binding_names(body):
        counts[name] = counts.get(name, 0) + 1
    found: dict[tuple[str, int], str] = {}
    for stmt in body.body:
        pair = _single_target(stmt)
        if pair is None:
            continue
        targets = pair[0].elements if isinstance(pair[0], cst.Tuple) else None
        values = pair[1].elements if isinstance(pair[1], cst.Tuple) else None
        couples = ([(t.value, v.value) for t, v in zip(targets, values, strict=True)]
                   if targets is not None and values is not None and len(targets) == len(values)
                   else [(pair[0], pair[1])])
        for target, value in couples:
            field = _op_field(value.value, op) if isinstance(value, cst.Subscript) else None
            index = _index(value) if isinstance(value, cst.Subscript) else None
            if (field and index is not None and isinstance(target, cst.Name) and counts.get(target.value) == 1
                    and (field, index) not in found and target.value not in found.values()):
                found[(field, index)] = target.value
    return found


class _MapOp(cst.CSTTransformer):
    def __init__(self, op: str, inputs: Sequence[str], outputs: Sequence[str] | None,
                 reads: Mapping[str, str]) -> None:
        self.op, self.targets, self.reads = op, {"inputs": list(inputs), "outputs": outputs}, reads
        self.problems: list[str] = []

    def visit_Call(self, node: cst.Call) -> bool:
        found = _get_attr(node, self.op)
        if found is None:
            return True
        name = found[0]
        if name is None:
            self.problems.append("reads op.get_attr(...) of an attribute named at run time, which a "
                                 "tf.custom_gradient has no op for: pass the value in by hand")
        elif attr_key(name) not in self.reads:
            self.problems.append(f"reads op.get_attr({name!r}), an attribute of the TF1 op, which a "
                                 "tf.custom_gradient has no op for: pass in the value the forward call sets it from "
                                 "by hand (e.g. close over it)")
        return False  # a literal name holds nothing to map; a computed one is refused

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        found = _get_attr(original, self.op)
        if found is None or found[0] is None or attr_key(found[0]) not in self.reads:
            return updated
        return cst.parse_expression(self.reads[attr_key(found[0])]).with_changes(
            lpar=updated.lpar, rpar=updated.rpar)

    def _target(self, field: str, index: int | None) -> str | None:
        values = self.targets[field]
        if values is None:
            self.problems.append(f"reads op.{field} but the number of {field} is not known statically")
            return None
        if index is None:
            return "[" + ", ".join(values) + "]"
        if not 0 <= index < len(values):
            self.problems.append(f"reads op.{field}[{index}] but the op has {len(values)} {field}")
            return None
        return values[index]

    def visit_Subscript(self, node: cst.Subscript) -> bool:
        return _op_field(node.value, self.op) is None or _index(node) is None

    def leave_Subscript(self, original: cst.Subscript, updated: cst.Subscript) -> cst.BaseExpression:
        field = _op_field(original.value, self.op)
        index = _index(original)
        if field is None or index is None:
            return updated
        target = self._target(field, index)
        return updated if target is None else cst.parse_expression(target).with_changes(
            lpar=updated.lpar, rpar=updated.rpar)

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        if not (isinstance(node.value, cst.Name) and node.value.value == self.op):
            return True
        attr = node.attr.value
        if attr not in _FIELDS and attr not in self.reads:
            self.problems.append(_NO_OP_READS.get(
                attr, f"reads op.{attr}, which a tf.custom_gradient has no equivalent for: rewrite by hand"))
        return False

    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute) -> cst.BaseExpression:
        field = _op_field(original, self.op)
        if field is None:
            if (isinstance(original.value, cst.Name) and original.value.value == self.op
                    and original.attr.value in self.reads):
                return cst.parse_expression(self.reads[original.attr.value])
            return updated
        target = self._target(field, None)
        return updated if target is None else cst.parse_expression(target)

    def visit_Del(self, node: cst.Del) -> bool:
        return not (isinstance(node.target, cst.Name) and node.target.value == self.op)

    def leave_SimpleStatementLine(
        self, original: cst.SimpleStatementLine, updated: cst.SimpleStatementLine
    ) -> cst.SimpleStatementLine | cst.RemovalSentinel:
        kept = [s for s in updated.body if not (
            isinstance(s, cst.Del) and isinstance(s.target, cst.Name) and s.target.value == self.op)
            and not _is_self_assignment(s)]
        if not kept:
            return cst.RemoveFromParent()
        return updated.with_changes(body=kept) if len(kept) != len(updated.body) else updated

    def visit_Name(self, node: cst.Name) -> None:
        if node.value == self.op:
            self.problems.append(f"uses `{self.op}` itself, which a tf.custom_gradient does not have")


def _names_of(node: cst.BaseExpression) -> list[str] | None:
    if isinstance(node, cst.Name):
        return [node.value]
    if isinstance(node, cst.Tuple | cst.List) and all(isinstance(e.value, cst.Name) for e in node.elements):
        return [e.value.value for e in node.elements if isinstance(e.value, cst.Name)]
    return None


def _is_self_assignment(stmt: cst.BaseSmallStatement) -> bool:
    """`x = x` or `a, b = a, b`, left behind when `x = op.inputs[0]` maps onto the input named x."""
    if not isinstance(stmt, cst.Assign) or len(stmt.targets) != 1:
        return False
    left, right = _names_of(stmt.targets[0].target), _names_of(stmt.value)
    return left is not None and left == right


def map_gradient_body(
    body: cst.BaseSuite | cst.BaseExpression, op: str | None, inputs: Sequence[str], outputs: Sequence[str] | None,
    reads: Mapping[str, str] | None = None,
) -> cst.IndentedBlock | Refused:
    """The body with `op` mapped (a lambda's expression becomes `return <expr>`), or why it cannot be.

    Args:
      body: the legacy gradient function's body, or a lambda's expression.
      op: the name of its first parameter (None when it has none: nothing to map).
      inputs, outputs: source code of the forward's inputs and outputs (`x`, `y[1]`); outputs None when unknown.
      reads: source code for other reads of `op` derivable from the overridden op: "type" for `op.type`,
        `attr_key("T")` for `op.get_attr("T")` (e.g. `{"type": "'Sign'", "get_attr:T": "x.dtype"}`).
    """
    if isinstance(body, cst.BaseExpression):
        block = cst.IndentedBlock(body=[cst.SimpleStatementLine(body=[cst.Return(value=body)])])
    elif isinstance(body, cst.IndentedBlock):
        block = body
    else:
        assert isinstance(body, cst.SimpleStatementSuite)
        block = cst.IndentedBlock(body=[cst.SimpleStatementLine(body=list(body.body))])
    if op is None:
        return block
    mapper = _MapOp(op, inputs, outputs, reads or {})
    mapped = block.visit(mapper)
    if mapper.problems:
        return Refused("the gradient function " + "; ".join(dict.fromkeys(mapper.problems)))
    assert isinstance(mapped, cst.IndentedBlock)
    closure = {n for n in (*inputs, *(outputs or ())) if n.isidentifier()}
    clash = sorted(assigned_names(mapped) & closure)
    if clash:
        return Refused(f"the gradient function assigns to {', '.join(clash)}, the name the rewrite gives the "
                       "op's input or output")
    if not mapped.body:
        mapped = mapped.with_changes(body=[cst.SimpleStatementLine(body=[cst.Pass()])])
    return mapped


# Reading a tensor only through these gives nothing to differentiate: second-order gradients cannot flow through it.
_VALUE_FREE_CALLS = frozenset({"ones_like", "zeros_like", "shape", "shape_n", "size", "rank"})
_VALUE_FREE_ATTRIBUTES = frozenset({"shape", "dtype", "get_shape", "ndim"})


def reads_outputs_differentiably(body: cst.BaseSuite | cst.BaseExpression, op: str | None) -> bool:
    """Whether the gradient body may differentiate through `op.outputs` (directly or via `y = op.outputs[j]`).

    In TF1 `op.outputs[j]` is the op's own output, so differentiating the gradient again (second order) goes
    through the custom gradient once more; a plain forward tensor would be differentiated by autodiff instead.
    Reads only through `tf.ones_like(y)`, `tf.shape(y)`, `y.dtype`... carry no gradient and do not count.
    """
    if op is None:
        return False
    name: str = op
    aliases = {name for (field, _), name in (adoptable_names(body, op) if isinstance(body, cst.BaseSuite)
                                             else {}).items() if field == "outputs"}

    def is_read(node: cst.BaseExpression) -> bool:
        if isinstance(node, cst.Name):
            return node.value in aliases
        if isinstance(node, cst.Subscript):
            return _op_field(node.value, name) == "outputs"
        return _op_field(node, name) == "outputs"

    class _Strip(cst.CSTTransformer):
        def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
            func = original.func
            leaf = func.attr.value if isinstance(func, cst.Attribute) else (
                func.value if isinstance(func, cst.Name) else None)
            if leaf in _VALUE_FREE_CALLS and original.args and is_read(original.args[0].value):
                return updated.with_changes(args=[cst.Arg(cst.Name("_"))])
            return updated

        def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute) -> cst.BaseExpression:
            if original.attr.value in _VALUE_FREE_ATTRIBUTES and is_read(original.value):
                return cst.Name("_")
            return updated

        def leave_SimpleStatementLine(
            self, original: cst.SimpleStatementLine, updated: cst.SimpleStatementLine
        ) -> cst.SimpleStatementLine | cst.RemovalSentinel:
            pair = _single_target(original)
            if pair is not None and isinstance(pair[0], cst.Name) and pair[0].value in aliases:
                return cst.RemoveFromParent()
            return updated

    stripped = body.visit(_Strip())
    found = False

    class _Find(cst.CSTVisitor):
        def visit_Name(self, node: cst.Name) -> None:
            nonlocal found
            found = found or node.value in aliases

        def visit_Attribute(self, node: cst.Attribute) -> None:
            nonlocal found
            found = found or _op_field(node, name) == "outputs"

    assert isinstance(stripped, cst.CSTNode)
    stripped.visit(_Find())
    return found
