"""Find `with G.gradient_override_map({...}):` blocks and decide, op call by op call, what each override means.

A block (with the maps nested in it) is rewritten only when every op it can create is visible: each call is a
known TensorFlow wrapper (`tf_ops.WRAPPERS`), no overridden type can come from a Python operator, the map is a
literal, and `G` is provably the default graph. Otherwise the whole block keeps its code and gets a TODO.
"""

from __future__ import annotations

import dataclasses

import libcst as cst
import libcst.metadata as meta

from compat.rewrite import tf_ops
from compat.rewrite.context import ModuleContext
from compat.rewrite.names import names_in

GradKey = str | tuple[str, int]  # a literal gradient name, or ("var", id(assignment)) for a name bound at run time
_NO_OP_CALLS = frozenset({"name_scope", "compat.v1.name_scope", "python.framework.ops.name_scope",
                          "get_default_graph", "python.framework.ops.get_default_graph"})
_OPERATORS = (cst.BinaryOperation, cst.Comparison, cst.Subscript, cst.AugAssign)


RUNTIME_MAP = "compat.gradient_override_map"  # gradcompat's TF2 form of a map (what a yielding block becomes)


def is_map_call(node: cst.CSTNode) -> bool:
    """A `X.gradient_override_map(...)` call, the legacy one or gradcompat's."""
    return (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)
            and node.func.attr.value == "gradient_override_map")


def is_legacy_map_call(ctx: ModuleContext, node: cst.CSTNode) -> bool:
    """A TF1 `graph.gradient_override_map(...)` call (not gradcompat's `compat.gradient_override_map`)."""
    return is_map_call(node) and ctx.qualname(node.func) != RUNTIME_MAP  # type: ignore[attr-defined]


def runtime_map_values(ctx: ModuleContext) -> dict[GradKey, int]:
    """Gradient name -> line, for the literal entries of the module's `compat.gradient_override_map` calls."""
    found: dict[GradKey, int] = {}
    for node in ctx.walk(ctx.module):
        if is_map_call(node) and not is_legacy_map_call(ctx, node):
            assert isinstance(node, cst.Call)
            for key in map_values(ctx, node):
                if key is not None:
                    found.setdefault(key, ctx.line(node))
    return found


def map_values(ctx: ModuleContext, call: cst.Call) -> list[GradKey | None]:
    """What each entry of the literal dict a map call is given names (None: not followed); [] for no literal."""
    value = call.args[0].value if call.args else None
    if not isinstance(value, cst.Dict):
        return []
    return [grad_key(ctx, element.value) for element in value.elements if isinstance(element, cst.DictElement)]


def grad_key(ctx: ModuleContext, expr: cst.BaseExpression) -> GradKey | None:
    """What a gradient name refers to: its literal value, or the one assignment of the variable holding it."""
    literal = ctx.string_value(expr)
    if literal is not None:
        return literal
    if isinstance(expr, cst.Name):
        assignment = ctx.single_assignment(expr)
        if assignment is not None:
            return ("var", id(assignment.node))
    return None


@dataclasses.dataclass
class OverrideUse:
    """One op call whose gradient a map overrides: `tf.sign(x)` under `{"Sign": "Identity"}`."""

    call: cst.Call
    wrapper: tf_ops.OpWrapper
    op_type: str
    gradient: GradKey
    shown: str  # the map value as written
    tensor_args: tuple[int | str, ...]
    signature: tuple[str, ...]  # callee and non-tensor arguments: uses sharing one function must agree
    nest: OverrideNest
    operator: cst.BinaryOperation | None = None  # `a * b`, for which `call` is the `tf.multiply(a, b)` it runs

    @property
    def replaced(self) -> cst.CSTNode:
        """The node the rewrite replaces by the custom-gradient call: the op call, or the operator."""
        return self.operator if self.operator is not None else self.call

    def tensor_positions(self) -> list[int]:
        """Indices in `call.args` of the tensor inputs, in the wrapper's order."""
        return [t if isinstance(t, int) else next(i for i, a in enumerate(self.call.args)
                                                  if a.keyword is not None and a.keyword.value == t)
                for t in self.tensor_args]

    def other_names(self) -> set[str]:
        """Names the call reads besides its tensor inputs (callee, `name=NAME`): a rewrite must not hide them."""
        tensors = set(self.tensor_positions())
        return names_in(self.call.with_changes(args=[a for i, a in enumerate(self.call.args) if i not in tensors]))


@dataclasses.dataclass
class OverrideNest:
    """An outermost override block with the override blocks nested in it, analysed as one unit."""

    outer: cst.With
    map_calls: list[cst.Call] = dataclasses.field(default_factory=list)
    items: dict[int, list[int]] = dataclasses.field(default_factory=dict)  # id(With) -> map item indices
    withs: list[cst.With] = dataclasses.field(default_factory=list)
    uses: list[OverrideUse] = dataclasses.field(default_factory=list)
    handles: set[str] = dataclasses.field(default_factory=set)
    problem: str | None = None
    seen: int = 0  # calls in the blocks that the rewriter knows the ops of
    following: frozenset[int] = frozenset()  # ids of this module's functions being followed into (recursion)
    yields: bool = False  # the block yields: its ops are built by code outside it
    map_problem: str | None = None  # why not even compat.gradient_override_map could replace the map as it is

    def refuse(self, reason: str) -> None:
        if self.problem is None:
            self.problem = reason

    def refuse_map(self, reason: str) -> None:
        """Refuse the map itself (its graph, its binding), whatever the block holds."""
        self.refuse(reason)
        if self.map_problem is None:
            self.map_problem = reason

    @property
    def runtime_map(self) -> bool:
        """Whether the map is kept, entered with `compat.gradient_override_map` instead: the block yields (a
        @contextmanager's caller builds the ops), and every map is one literal argument on the default graph."""
        return self.yields and self.map_problem is None and all(
            len(call.args) == 1 and not call.args[0].keyword and not call.args[0].star for call in self.map_calls)


def _map_items(ctx: ModuleContext, with_node: cst.With) -> list[int]:
    return [i for i, item in enumerate(with_node.items) if is_legacy_map_call(ctx, item.item)]


def find_nests(ctx: ModuleContext) -> list[OverrideNest]:
    """Every outermost override block, analysed."""
    nests = []
    for node in ctx.walk(ctx.module):
        if isinstance(node, cst.With) and _map_items(ctx, node) and not any(
                isinstance(a, cst.With) and _map_items(ctx, a) for a in ctx.ancestors(node)):
            nests.append(_analyse(ctx, node))
    return nests


def stray_map_calls(ctx: ModuleContext) -> list[cst.Call]:
    """`gradient_override_map(...)` calls that are not a `with` item (entered by hand, stored, ...)."""
    return [n for n in ctx.walk(ctx.module) if isinstance(n, cst.Call) and is_legacy_map_call(ctx, n)
            and not isinstance(ctx.parent(n), cst.WithItem)]


def _parse_map(ctx: ModuleContext, call: cst.Call, nest: OverrideNest) -> dict[str, tuple[GradKey, str]]:
    arg = call.args[0].value if len(call.args) == 1 and call.args[0].keyword is None else None
    if not isinstance(arg, cst.Dict):
        shown = ctx.code(arg) if arg is not None else "its arguments"
        nest.refuse(f"the override map is built from `{shown}`, not a literal dict, so the overridden op types "
                    "are not known statically: wrap each overridden op in a @tf.custom_gradient by hand")
        return {}
    result: dict[str, tuple[GradKey, str]] = {}
    for element in arg.elements:
        if not isinstance(element, cst.DictElement):
            nest.refuse("the override map unpacks another mapping (`**`); list its entries literally or "
                        "rewrite by hand")
            continue
        key = ctx.string_value(element.key)
        value = grad_key(ctx, element.value)
        if key is None or value is None:
            nest.refuse(f"the override map entry `{ctx.code(element.key)}: {ctx.code(element.value)}` is not a "
                        "literal op type and gradient name: rewrite it as a @tf.custom_gradient by hand")
            continue
        result[key] = (value, ctx.code(element.value))
    return result


def _check_graph(ctx: ModuleContext, call: cst.Call, nest: OverrideNest) -> None:
    assert isinstance(call.func, cst.Attribute)
    graph = call.func.value
    if ctx.is_default_graph_call(graph):
        return
    if isinstance(graph, cst.Name):
        found = ctx.assigned_value(graph)
        if found and ctx.is_default_graph_call(found[1]):
            if isinstance(found[0].scope, meta.GlobalScope | meta.ClassScope):
                nest.refuse_map(f"`{graph.value}` is the default graph at import time, so the map only applies to "
                            "ops built in that graph: check where this code runs, then use a "
                            "@tf.custom_gradient by hand")
            else:
                switch = _graph_switch(ctx, found[0].node, call)
                if switch is None:
                    nest.handles.add(graph.value)
                else:
                    nest.refuse_map(f"`{graph.value}` may not be the default graph where the map is entered "
                                    f"(`{switch}` changes it), and TF1 ignores a map on another graph: check which "
                                    "graph the ops are built in, then use a @tf.custom_gradient by hand")
            return
    if isinstance(graph, cst.Name) and _entered_as_default(ctx, graph, call, nest):
        return
    nest.refuse_map(f"the map is entered on `{ctx.code(graph)}`, which the rewriter cannot prove is the graph the ops "
                "are built in: rewrite the overridden ops as @tf.custom_gradient by hand")


def _entered_as_default(ctx: ModuleContext, graph: cst.Name, map_call: cst.Call, nest: OverrideNest) -> bool:
    """Whether the map is entered, in the same function, inside `with graph.as_default():` or `with
    X.as_default() as graph:`, so `graph` is the default graph there (`nest` refused if another switch may
    intervene)."""
    binding = ctx.single_assignment(graph)
    function = ctx.enclosing_function(map_call)
    if binding is None or function is None:  # module level: `_graph_switch` searches functions only
        return False
    for with_node in (a for a in ctx.ancestors(map_call) if isinstance(a, cst.With)):
        if ctx.enclosing_function(with_node) is not function:
            return False
        for item in with_node.items:
            if not (isinstance(item.item, cst.Call) and isinstance(item.item.func, cst.Attribute)
                    and item.item.func.attr.value == "as_default" and not item.item.args):
                continue
            entered = item.item.func.value
            bound = item.asname.name if item.asname is not None else None
            if (isinstance(bound, cst.Name) and binding.node is bound) or (
                    isinstance(entered, cst.Name) and entered.value == graph.value
                    and ctx.single_assignment(entered) is binding):
                later = with_node.items[with_node.items.index(item) + 1:]
                switch = next((ctx.code(i.item) for i in later if _switch_leaf(i.item)), None) or _graph_switch(
                    ctx, item, map_call)
                if switch is not None:
                    nest.refuse_map(f"`{graph.value}` may not be the default graph where the map is entered "
                                    f"(`{switch}` changes it), and TF1 ignores a map on another graph: check which "
                                    "graph the ops are built in, then use a @tf.custom_gradient by hand")
                return True
    return False


_GRAPH_SWITCHES = frozenset({"as_default", "reset_default_graph", "__enter__", "__exit__"})


def _graph_switch(ctx: ModuleContext, handle: cst.CSTNode, map_call: cst.Call) -> str | None:
    """A call that may change the default graph between `G = get_default_graph()` and the map, else None.

    Searched in the function taking `G` (functions nested in it included, as `quantize` in DoReFa's
    `get_dorefa`): a `with g.as_default():` around both the handle and the map is harmless; any other
    `as_default()`, `reset_default_graph()` or hand-entered context may make `G` another graph than the one the
    map's ops are built in.
    """
    function = ctx.enclosing_function(handle)
    for node in ctx.walk(function) if function is not None else ():
        if not _switch_leaf(node):
            continue
        assert isinstance(node, cst.Call)
        item = ctx.parent(node)
        with_node = ctx.parent(item) if isinstance(item, cst.WithItem) else None
        if isinstance(with_node, cst.With) and all(
                with_node in set(ctx.ancestors(n)) for n in (handle, map_call)):
            continue
        return ctx.code(node)
    return None


def _switch_leaf(node: cst.CSTNode) -> bool:
    """A call whose name is one of `_GRAPH_SWITCHES` (`other.as_default()`, `tf.reset_default_graph()`)."""
    if not isinstance(node, cst.Call):
        return False
    func = node.func
    leaf = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else None
    return leaf in _GRAPH_SWITCHES


def _static(ctx: ModuleContext, expr: cst.BaseExpression) -> bool:
    """A literal or an imported name (`tf.float32`): the same value wherever the helper is defined."""
    if isinstance(expr, cst.SimpleString | cst.Integer | cst.Float | cst.Imaginary | cst.ConcatenatedString):
        return True
    if isinstance(expr, cst.Name) and expr.value in ("True", "False", "None"):
        return True
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
        return _static(ctx, expr.expression)
    return ctx.qualname(expr) is not None


def _never_mul(node: cst.CSTNode) -> frozenset[str]:
    """{"Mul"} for a binary operator other than `*` (`+`, `-`, `/`, `@`, ...: TensorFlow creates no Mul for them,
    tests/rewrite/test_tf_ops.py checks), else nothing."""
    operator = getattr(node, "operator", None)
    binary = isinstance(node, cst.BinaryOperation | cst.AugAssign)
    return frozenset({"Mul"}) if binary and not isinstance(operator, cst.Multiply | cst.MultiplyAssign) else frozenset()


def _multiplies_tensors(ctx: ModuleContext, node: cst.BinaryOperation) -> bool:
    """Whether `a * b` surely creates one Mul op: both sides dense tensors from TensorFlow calls the rewriter
    knows (`tf.sign(x) * tf.stop_gradient(mask)`), or one of them and a number."""
    if not isinstance(node.operator, cst.Multiply):
        return False
    sides = (node.left, node.right)
    calls = [side for side in sides if isinstance(side, cst.Call) and tf_ops.lookup(ctx.public_path(side.func))]
    numbers = [side for side in sides if isinstance(side, cst.Integer | cst.Float)]
    return bool(calls) and len(calls) + len(numbers) == 2


def _tensor_args(ctx: ModuleContext, call: cst.Call, wrapper: tf_ops.OpWrapper,
                 nest: OverrideNest) -> tuple[tuple[int | str, ...], tuple[str, ...]] | None:
    """(positions or keywords of the tensor inputs, the call's signature), or None with the nest refused."""
    found: dict[str, int | str] = {}
    statics: list[str] = [ctx.code(call.func)]
    for position, arg in enumerate(call.args):
        if arg.star:
            nest.refuse(f"`{ctx.code(call)}` passes `{arg.star}` arguments: spell them out, or rewrite by hand")
            return None
        name = arg.keyword.value if arg.keyword else (
            wrapper.inputs[position] if position < len(wrapper.inputs) else None)
        if name in wrapper.inputs:
            found[name] = position if arg.keyword is None else name
        elif _static(ctx, arg.value):
            statics.append(ctx.code(arg).rstrip(", "))
        else:
            nest.refuse(f"`{ctx.code(call)}` has the argument `{ctx.code(arg.value)}`, which is neither a tensor "
                        "input nor a literal: rewrite this op as a @tf.custom_gradient by hand")
            return None
    if len(found) != len(wrapper.inputs):
        nest.refuse(f"`{ctx.code(call)}` does not pass every tensor input ({', '.join(wrapper.inputs)})")
        return None
    return tuple(found[n] for n in wrapper.inputs), tuple(statics)


def _analyse(ctx: ModuleContext, outer: cst.With) -> OverrideNest:
    nest = OverrideNest(outer)
    _scan(ctx, outer, {}, nest)
    if not nest.uses and not nest.seen:  # never drop a map whose ops were not seen: they may be overridden
        nest.refuse("the override block creates no op the rewriter can see (no TensorFlow call it knows), so it "
                    "cannot show that dropping the map keeps the gradients: remove the map by hand if it overrides "
                    "nothing, else wrap each overridden op in a @tf.custom_gradient by hand")
    return nest


def _scan(ctx: ModuleContext, node: cst.CSTNode, active: dict[str, tuple[GradKey, str]], nest: OverrideNest) -> None:
    if isinstance(node, cst.With) and _map_items(ctx, node):
        indices = _map_items(ctx, node)
        nest.withs.append(node)
        nest.items[id(node)] = indices
        inner = dict(active)
        for i, item in enumerate(node.items):
            if i in indices:
                assert isinstance(item.item, cst.Call)
                nest.map_calls.append(item.item)
                if item.asname is not None:
                    nest.refuse_map("the override map is bound with `as`: rewrite by hand")
                _check_graph(ctx, item.item, nest)
                inner.update(_parse_map(ctx, item.item, nest))
            else:
                _scan(ctx, item, inner, nest)
        _scan(ctx, node.body, inner, nest)
        return
    if isinstance(node, cst.Yield | cst.Await):
        nest.yields = nest.yields or isinstance(node, cst.Yield)
        word = "yields" if isinstance(node, cst.Yield) else "awaits"
        gradients = "{" + ", ".join(f'"{op_type}": {shown}' for op_type, (_, shown) in sorted(active.items())) + "}"
        nest.refuse(f"the override block {word}, so the map is also active in code outside it that the rewriter "
                    "cannot see (e.g. the body of the caller's `with` over a @contextmanager): dropping it would "
                    "lose the override there; run that code through `compat.override_gradients(fn_or_model, "
                    f"{gradients})` (`import compat`), which TF2 tapes honour (README: compat.override_gradients), "
                    "or wrap each overridden op it creates in a @tf.custom_gradient by hand")
    if isinstance(node, cst.FunctionDef | cst.Lambda | cst.ClassDef):
        nest.refuse("the override block defines a function or class, whose ops are built later, maybe under "
                    "another map: move it out of the block, or rewrite by hand")
        return
    if isinstance(node, cst.Call):
        _scan_call(ctx, node, active, nest)
    elif isinstance(node, _OPERATORS) or (
            isinstance(node, cst.UnaryOperation) and not isinstance(node.operator, cst.Not)):
        clash = sorted(set(active) & tf_ops.OPERATOR_OP_TYPES - _never_mul(node))
        if clash == ["Mul"] and isinstance(node, cst.BinaryOperation) and _multiplies_tensors(ctx, node):
            gradient, shown = active["Mul"]
            call = cst.Call(func=cst.parse_expression(f"{ctx.tf_alias() or 'tf'}.multiply"),
                            args=[cst.Arg(node.left), cst.Arg(node.right)])
            nest.uses.append(OverrideUse(call, tf_ops.WRAPPERS["multiply"], "Mul", gradient, shown, (0, 1),
                                         ("*",), nest, node))
            nest.seen += 1
        elif clash:
            nest.refuse(f"the map overrides {', '.join(clash)}, which the Python operator in "
                        f"`{ctx.code(node).strip()}` may also create: rewrite by hand")
    for child in node.children:
        _scan(ctx, child, active, nest)


def _scan_call(ctx: ModuleContext, call: cst.Call, active: dict[str, tuple[GradKey, str]], nest: OverrideNest) -> None:
    path = ctx.public_path(call.func)
    if path in _NO_OP_CALLS or not active:
        return
    wrapper = tf_ops.lookup(path)
    if wrapper is None and _follow(ctx, call, active, nest):
        return
    if wrapper is None:
        nest.refuse(f"the override block calls `{ctx.code(call.func)}`, code the rewriter cannot see into, which "
                    f"may create ops of the overridden types ({', '.join(sorted(active))}): wrap each overridden "
                    f"op in a @tf.custom_gradient by hand, or {_runtime_helper_hint(ctx, call, active, nest)}")
        return
    nest.seen += 1
    overridden = sorted(wrapper.op_types & set(active))
    if not overridden:
        return
    if wrapper.single_op is None:
        nest.refuse(f"`{ctx.code(call.func)}` creates several ops ({', '.join(sorted(wrapper.op_types))}) and the "
                    f"map overrides {', '.join(overridden)}: rewrite by hand")
        return
    if not wrapper.always_creates:
        nest.refuse(f"`{ctx.code(call.func)}` creates no {wrapper.single_op} op when {wrapper.no_op_when}, and "
                    "then TF1 applies no override, while a @tf.custom_gradient always would: check the dtypes, "
                    "then rewrite by hand")
        return
    found = _tensor_args(ctx, call, wrapper, nest)
    if found is None:
        return
    op_type = wrapper.single_op
    gradient, shown = active[op_type]
    nest.uses.append(OverrideUse(call, wrapper, op_type, gradient, shown, found[0], found[1], nest))


def _follow(ctx: ModuleContext, call: cst.Call, active: dict[str, tuple[GradKey, str]], nest: OverrideNest) -> bool:
    """Whether `call` runs a plain function of this module whose ops the rewriter sees and that creates none of the
    overridden types (then the map changes nothing in it); False, or the nest refused, otherwise."""
    function = _module_function(ctx, call.func)
    if function is None:
        return False
    if id(function) in nest.following:
        nest.refuse(f"the override block calls `{function.name.value}`, which calls itself: rewrite by hand")
        return True
    probe = OverrideNest(nest.outer, following=nest.following | {id(function)})
    _scan(ctx, function.body, active, probe)
    where = f"the override block calls `{function.name.value}` (line {ctx.line(function)})"
    hint = _runtime_helper_hint(ctx, call, active, nest)
    how = f"wrap each overridden op in a @tf.custom_gradient by hand, or {hint}"
    if probe.problem is not None:  # its reason, up to its own how-to, then the how-to for this call
        inner = probe.problem.split(": ", 1)[0].removeprefix("the override block ")
        nest.refuse(f"{where}, which {inner}: {how}")
    elif probe.uses:
        types = sorted({use.op_type for use in probe.uses})
        nest.refuse(f"{where}, which creates {', '.join(types)} ops the map overrides, and may be called without "
                    f"the map too: {how}")
    nest.seen += probe.seen
    return True


def _module_function(ctx: ModuleContext, func: cst.BaseExpression) -> cst.FunctionDef | None:
    """The module-level, undecorated, synchronous `def` that the name `func` always refers to, or None."""
    if not isinstance(func, cst.Name):
        return None
    assignment = ctx.single_assignment(func)
    if assignment is None or not isinstance(assignment.scope, meta.GlobalScope):
        return None
    node = assignment.node
    if not isinstance(node, cst.FunctionDef) or node.decorators or node.asynchronous is not None:
        return None
    return node


def _runtime_helper_hint(ctx: ModuleContext, call: cst.Call, active: dict[str, tuple[GradKey, str]],
                         nest: OverrideNest) -> str:
    """How to keep the override with `compat.override_gradients`: a line replacing the block where it is one call."""
    gradients = "{" + ", ".join(f'"{op_type}": {shown}' for op_type, (_, shown) in sorted(active.items())) + "}"
    callee = ctx.code(call.func)
    statement = ctx.parent(call)
    body = nest.outer.body.body
    if (len(nest.withs) > 1 or len(nest.outer.items) > 1 or len(body) != 1
            or not isinstance(body[0], cst.SimpleStatementLine) or len(body[0].body) != 1
            or body[0].body[0] is not statement or not _one_target(statement)):
        return (f"run the code that builds those ops (a function, or a model) through `compat.override_gradients("
                f"fn_or_model, {gradients})` (`import compat`), which enters the map inside a tf.function, where TF2 "
                "tapes honour it (README: compat.override_gradients)")
    assert isinstance(statement, cst.Assign | cst.Return)
    lead = "return " if isinstance(statement, cst.Return) else f"{ctx.code(statement.targets[0].target)} = "
    args = ", ".join(ctx.code(a).strip().rstrip(",") for a in call.args)
    line = f"`{lead}compat.override_gradients({callee}, {gradients})({args})`"
    if ctx.public_path(call.func) is not None:  # a TensorFlow function: it returns tensors
        return f"replace the whole `with` block (`import compat`) by {line}"
    return (f"replace the whole `with` block (`import compat`) by {line} if `{callee}` builds the ops from its "
            f"arguments, or by `{lead}compat.override_gradients({callee}({args}), {gradients})` if it returns a "
            "model whose calls build them (Keras in TF2)")


def _one_target(statement: cst.CSTNode | None) -> bool:
    if isinstance(statement, cst.Return):
        return True
    return isinstance(statement, cst.Assign) and len(statement.targets) == 1
