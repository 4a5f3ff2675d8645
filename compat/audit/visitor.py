"""Find legacy gradient patterns in one parsed module: the per-file rules GC001–GC007."""

from __future__ import annotations

import ast
import dataclasses
import difflib
import re
from collections import defaultdict
from collections.abc import Iterator

from compat.audit import suggestions
from compat.audit.branches import BranchMap
from compat.audit.data import TFData
from compat.audit.findings import FileResult, Finding, Site
from compat.audit.imports import ImportMap, is_tf, tf_leaf, tf_public_name
from compat.audit.prefilter import TRIGGER_WORDS
from compat.audit.rules import RULES, Severity
from compat.audit.scopes import position
from compat.audit.traverse import LineSet, iter_nodes, iter_statements, nodes_on_lines

_FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda
# Calls that switch a whole file to graph mode, making every custom_gradient graph-mode.
_GRAPH_MODE_SWITCHES = frozenset({"disable_eager_execution", "disable_v2_behavior", "Session"})
RUNTIME_MAP = "compat.gradient_override_map"  # gradcompat's TF2 form of a map: not a legacy site
_NUMPY = re.compile(r"\bnumpy\b")  # only functions with this word on one of their lines can call .numpy()
_LEGACY_RULES = frozenset({"GC001", "GC002", "GC003", "GC004"})
_TRIGGER_APIS = frozenset({"Defun", "RegisterGradient", "custom_gradient", "function"})


@dataclasses.dataclass(frozen=True)
class _GradFn:
    """A function that TensorFlow will call as a gradient, and why we think so."""

    node: _FunctionNode
    why: str


def _str(node: ast.AST | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _name(node: ast.AST) -> str:
    if isinstance(node, ast.Lambda):
        return "<lambda>"
    return getattr(node, "name", None) or getattr(node, "id", None) or getattr(node, "attr", None) or "<expr>"


def _own_nodes(fn: _FunctionNode) -> Iterator[ast.AST]:
    """Nodes of a function body, not descending into nested functions (those run at other times)."""
    stack: list[ast.AST] = list(fn.body) if isinstance(fn.body, list) else [fn.body]
    while stack:
        node = stack.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            if not isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef):
                stack.append(child)


class ModuleAudit:
    """Audits one module's AST. Use `ModuleAudit(path, tree, data).run()` -> FileResult."""

    def __init__(self, path: str, tree: ast.Module, source: str, data: TFData, lines: int = 0) -> None:
        self.path = path
        self.tree = tree
        self.source = source
        self.data = data
        self.lines = lines
        self.imports = ImportMap.from_tree(tree)
        self._branches: BranchMap | None = None
        self.findings: list[Finding] = []
        self.tf1_findings: list[Finding] = []
        self.registrations: list[Site] = []
        self.override_targets: list[Site] = []
        self.runtime_targets: list[Site] = []
        self.defs: dict[str, list[_FunctionNode]] = defaultdict(list)
        self.dict_assigns: dict[str, list[ast.AST]] = defaultdict(list)
        self.grad_fns: list[_GradFn] = []
        self.grad_refs: list[tuple[ast.AST, str]] = []  # (Name node, why) resolved after the walk
        self.registered_fn: dict[str, str] = {}  # gradient name -> function name that implements it
        self.override_pairs: list[tuple[str, str]] = []  # (op type, gradient name)
        self.custom_gradient_fns: list[ast.FunctionDef | ast.AsyncFunctionDef] = []
        self.graph_fns: list[_FunctionNode] = []
        self.graph_fn_names: set[str] = set()
        self.graph_mode_file = False
        self.decorator_owner: dict[int, str] = {}  # id(decorator Call) -> decorated function name

    # -- helpers ---------------------------------------------------------------------------------------
    def _add(self, rule: str, node: ast.AST, message: str, suggestion: str, severity: str | None = None,
             into: list[Finding] | None = None) -> None:
        line, col = position(node)
        (self.findings if into is None else into).append(Finding(
            path=self.path,
            line=line,
            col=col + 1,
            rule=rule,
            end_line=getattr(node, "end_lineno", None) or line,
            severity=str(severity or RULES[rule].severity),
            message=message,
            suggestion=suggestion,
        ))

    def _site(self, name: str, node: ast.AST) -> Site:
        if self._branches is None:  # built on the first registration: most files have none
            self._branches = BranchMap(self.tree)
        line, col = position(node)
        return Site(name, self.path, line, col + 1, getattr(node, "end_lineno", None) or line, self._branches.at(node))

    def _leaf(self, func: ast.AST) -> str | None:
        return tf_leaf(self.imports.qualname(func))

    def _is_tf_function(self, func: ast.AST) -> bool:
        q = self.imports.qualname(func)
        return is_tf(q) and q.rsplit(".", 1)[-1] == "function" and (
            q.count(".") == 1 or q.startswith("tensorflow.compat.") or ".eager." in q
        )

    # -- the walk --------------------------------------------------------------------------------------
    def run(self) -> FileResult:
        for stmt in iter_statements(self.tree.body):
            if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
                self._visit_def(stmt)
            elif isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Dict | ast.Call):
                for target in stmt.targets:
                    if isinstance(target, ast.Name):
                        self.dict_assigns[target.id].append(stmt.value)
        # Only statements on lines naming a legacy API (or a local alias of one) are walked in full.
        for node in nodes_on_lines(self.tree.body, LineSet(self.source, self._trigger_pattern())):
            if isinstance(node, ast.Call):
                self._visit_call(node)
        self._resolve_grad_refs()
        self._check_numpy_calls()
        self._suggest_override_pairs()
        findings = list(self.findings)
        legacy = any(f.rule in _LEGACY_RULES for f in findings)
        if legacy or self.custom_gradient_fns:
            # With TF2 custom gradients only (a migrated file), just the names TF2 lacks: a crash there, not a choice.
            for node in nodes_on_lines(self.tree.body, LineSet(self.source, self._tf_alias_pattern())):
                if isinstance(node, ast.Attribute | ast.Name) and isinstance(node.ctx, ast.Load):
                    self._visit_name(node, missing_in_tf2_only=not legacy)
            findings.extend(self.tf1_findings)
        return FileResult(
            path=self.path,
            lines=self.lines,
            parsed=True,
            findings=tuple(sorted(findings)),
            registrations=tuple(self.registrations),
            override_targets=tuple(self.override_targets),
            runtime_targets=tuple(self.runtime_targets),
            loads_op_library=bool(self.registrations) and self._loads_op_library(),
        )

    def _loads_op_library(self) -> bool:
        """Whether the module calls `tf.load_op_library` (any alias): the custom ops it loads are real op types."""
        lines = LineSet(self.source, re.compile(r"load_op_library"))
        return any(isinstance(node, ast.Call) and self._leaf(node.func) == "load_op_library"
                   for node in nodes_on_lines(self.tree.body, lines))

    def _trigger_pattern(self) -> re.Pattern[str]:
        aliases = self.imports.local_names_for(lambda q: tf_leaf(q) in _TRIGGER_APIS)
        aliases += self.imports.local_names_for(lambda q: tf_leaf(q) in _GRAPH_MODE_SWITCHES)
        aliases += [name for name, b in self.imports.scopes.all_bindings()  # `gom = g.gradient_override_map`
                    if b.value is not None and self._member(b.value) == "gradient_override_map"]
        words = sorted({*TRIGGER_WORDS, *aliases, *_GRAPH_MODE_SWITCHES})
        pattern = "|".join(re.escape(w) for w in words)
        if self.custom_gradient_fns:
            pattern += r"|\bfunction\s*\("  # `tf.function(f)` calls make f a graph context
        return re.compile(pattern)

    def _tf_alias_pattern(self) -> re.Pattern[str] | None:
        """Lines that can name a public TF API: those using a local name bound to a public TF module/name."""
        aliases = self.imports.local_names_for(
            lambda q: is_tf(q) and not q.startswith(("tensorflow.python.", "tensorflow.core.")))
        if not aliases:
            return None
        return re.compile(r"\b(?:" + "|".join(re.escape(a) for a in aliases) + r")\b")

    def _visit_def(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.defs[node.name].append(node)
        for deco in node.decorator_list:
            self.decorator_owner[id(deco)] = node.name
            func = deco.func if isinstance(deco, ast.Call) else deco
            leaf = self._leaf(func)
            if leaf == "RegisterGradient" and isinstance(deco, ast.Call):
                self.grad_fns.append(_GradFn(node, "registered with RegisterGradient"))
                name = _str(deco.args[0]) if deco.args else None
                if name:
                    self.registered_fn[name] = node.name
            elif leaf == "custom_gradient":
                self.custom_gradient_fns.append(node)
            elif self._is_tf_function(func):
                self.graph_fns.append(node)
                self.graph_fn_names.add(node.name)

    def _visit_call(self, node: ast.Call) -> None:
        leaf = self._leaf(node.func)
        if leaf == "Defun":
            self._visit_defun(node)
        elif leaf == "RegisterGradient":
            self._visit_register(node)
        elif self._member(node.func) == "gradient_override_map":
            if self.imports.qualname(node.func) == RUNTIME_MAP:
                self._visit_runtime_map(node)
            else:
                self._visit_override_map(node)
        elif leaf == "function" and self._is_tf_function(node.func) and node.args:
            arg = node.args[0]
            if isinstance(arg, ast.Name):
                self.graph_fn_names.add(arg.id)
        elif leaf in _GRAPH_MODE_SWITCHES:
            self.graph_mode_file = True
        # `RegisterGradient("N")(fn)`: the outer call's func is the RegisterGradient call.
        if isinstance(node.func, ast.Call) and self._leaf(node.func.func) == "RegisterGradient" and node.args:
            self.grad_refs.append((node.args[0], "registered with RegisterGradient"))
            name = _str(node.func.args[0]) if node.func.args else None
            if name and isinstance(node.args[0], ast.Name):
                self.registered_fn[name] = node.args[0].id

    def _member(self, func: ast.expr, depth: int = 0) -> str | None:
        """`m` for `x.m`, `getattr(x, "m")`, or a name assigned one of those (`gom = g.gradient_override_map`)."""
        if isinstance(func, ast.Attribute):
            return func.attr
        if (isinstance(func, ast.Call) and isinstance(func.func, ast.Name) and func.func.id == "getattr"
                and len(func.args) >= 2):
            return _str(func.args[1])
        if isinstance(func, ast.Name) and depth < 4:
            value = self.imports.assigned_value(func)
            return self._member(value, depth + 1) if value is not None else None
        return None

    def _visit_defun(self, node: ast.Call) -> None:
        decorated = self._decorated_by(node)
        for kw in node.keywords:
            if kw.arg not in ("grad_func", "python_grad_func"):
                continue
            python_grad = kw.arg == "python_grad_func"
            rule = "GC002" if python_grad else "GC001"
            grad = _name(kw.value)
            self._add(
                rule, node,
                f"Defun({kw.arg}={grad}){f' on {decorated!r}' if decorated else ''}: Defun and its "
                f"{kw.arg} do not exist in TF2",
                suggestions.for_defun(decorated, grad, python_grad),
            )
            self.grad_refs.append((kw.value, f"passed as Defun {kw.arg}"))

    def _decorated_by(self, call: ast.Call) -> str | None:
        return self.decorator_owner.get(id(call))

    def _visit_register(self, node: ast.Call) -> None:
        name = _str(node.args[0]) if node.args else None
        if name:
            self.registrations.append(self._site(name, node))
        shown = repr(name) if name else "<non-literal name>"
        fn = self._decorated_by(node) or self.registered_fn.get(name or "")
        op_type = next((op for op, grad in self.override_pairs if grad == name), None)
        self._add(
            "GC003", node,
            f"RegisterGradient({shown}){f' on {fn!r}' if fn else ''}: a graph-mode gradient registry entry",
            suggestions.for_registered_gradient(name, fn, op_type, self.data),
        )

    def _mapping_items(self, arg: ast.AST, seen: frozenset[str] = frozenset()) -> list[tuple[ast.AST, ast.AST]]:
        """Key/value nodes of a literal dict, `dict(...)`, or a name assigned one elsewhere in the module."""
        if isinstance(arg, ast.Dict):
            return [(k, v) for k, v in zip(arg.keys, arg.values, strict=True) if k is not None]
        if isinstance(arg, ast.Call) and isinstance(arg.func, ast.Name) and arg.func.id == "dict":
            items: list[tuple[ast.AST, ast.AST]] = [
                (ast.copy_location(ast.Constant(kw.arg), kw.value), kw.value) for kw in arg.keywords if kw.arg]
            for a in arg.args:
                items += self._mapping_items(a, seen)
            return items
        if isinstance(arg, ast.Name) and arg.id not in seen:
            return [item for value in self.dict_assigns.get(arg.id, ())
                    for item in self._mapping_items(value, seen | {arg.id})]
        return []

    def _visit_override_map(self, node: ast.Call) -> None:
        arg = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "op_type_map"), None)
        items = self._mapping_items(arg) if arg is not None else []
        pairs = [(_str(k), _str(v)) for k, v in items]
        shown = ast.unparse(arg) if arg is not None else ""
        shown = shown if len(shown) <= 80 else shown[:77] + "..."
        literal = bool(items) and all(k and v for k, v in pairs)
        self._add(
            "GC004", node,
            f"gradient_override_map({shown})" + ("" if literal else " (entries not all literal; check every entry)")
            + ": a graph-only override; a tf.GradientTape (eager or in tf.function) looks gradients up by the "
            "real op type and silently ignores it",
            "\n\n".join(
                suggestions.for_registered_gradient(v, self.registered_fn.get(v or ""), k, self.data)
                for k, v in (_real_op_pairs(pairs, self.data) or [(None, None)])
            ),
        )
        for key_node, value_node in items:
            key, value = _str(key_node), _str(value_node)
            if value:
                self.override_targets.append(self._site(value, value_node))
            if key:
                self.override_pairs.append((key, value or ""))
                self._check_op_type(key, key_node)

    def _visit_runtime_map(self, node: ast.Call) -> None:
        """gradcompat's TF2 form of a map (what compat-rewrite writes for a map around a `yield`): no finding,
        but the gradients it names are used."""
        arg = node.args[0] if node.args else None
        for _, value_node in self._mapping_items(arg) if arg is not None else []:
            value = _str(value_node)
            if value:
                self.runtime_targets.append(self._site(value, value_node))

    def _check_op_type(self, key: str, node: ast.AST) -> None:
        if key in self.data.op_types:
            return
        by_lower = {op.lower(): op for op in self.data.op_types}
        close = [by_lower[key.lower()]] if key.lower() in by_lower else difflib.get_close_matches(
            key, list(self.data.op_types), n=3, cutoff=0.6)
        hint = f"did you mean {close[0]!r}?" if close else "see tf.raw_ops for op type names"
        self._add(
            "GC007", node,
            f"override-map key {key!r} is not a TensorFlow {self.data.version} op type; TensorFlow silently "
            f"ignores it ({hint})",
            f"Use {close[0]!r}" + (f" (other close op types: {', '.join(map(repr, close[1:]))})"
                                   if len(close) > 1 else "") + "."
            if close else "Use the exact, case-sensitive op type of the op you want to override.",
        )

    def _visit_name(self, node: ast.Attribute | ast.Name, missing_in_tf2_only: bool = False) -> None:
        public = tf_public_name(self.imports.qualname(node))
        if public is None or public[0] not in self.data.tf1_only_apis:
            return
        name, via_v1 = public
        if via_v1 and missing_in_tf2_only:
            return
        self._add(
            "GC005", node,
            suggestions.tf1_api_problem(name, via_v1),
            suggestions.for_tf1_api(name, via_v1),
            into=self.tf1_findings,
        )

    # -- after the walk --------------------------------------------------------------------------------
    def _resolve_grad_refs(self) -> None:
        for ref, why in self.grad_refs:
            if isinstance(ref, ast.Lambda):
                self.grad_fns.append(_GradFn(ref, why))
            elif isinstance(ref, ast.Name):
                self.grad_fns += [_GradFn(fn, why) for fn in self.defs.get(ref.id, ())]
        if self.graph_fn_names or self.graph_mode_file:
            for fn in self.custom_gradient_fns:
                if self.graph_mode_file or self._used_in_graph(fn):
                    for inner in self._inner_grads(fn):
                        self.grad_fns.append(_GradFn(inner, f"the gradient of custom_gradient {fn.name!r}, "
                                                            "which runs inside tf.function/graph mode"))

    def _used_in_graph(self, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
        if fn.name in self.graph_fn_names:
            return True
        graph_bodies = [g for name in self.graph_fn_names for g in self.defs.get(name, ())]
        return any(isinstance(n, ast.Name) and n.id == fn.name for n in iter_nodes(graph_bodies))

    @staticmethod
    def _inner_grads(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.FunctionDef]:
        inner = {n.name: n for n in ast.walk(fn) if isinstance(n, ast.FunctionDef) and n is not fn}
        returned = [
            r.value.elts[1].id for r in ast.walk(fn)
            if isinstance(r, ast.Return) and isinstance(r.value, ast.Tuple) and len(r.value.elts) == 2
            and isinstance(r.value.elts[1], ast.Name)
        ]
        named = [inner[name] for name in returned if name in inner]
        return named or list(inner.values())

    def _check_numpy_calls(self) -> None:
        seen: set[int] = set()
        numpy_lines = LineSet(self.source, _NUMPY)
        for grad in self.grad_fns:
            if id(grad.node) in seen or not numpy_lines.intersects(grad.node.lineno,
                                                                   grad.node.end_lineno or grad.node.lineno):
                continue
            seen.add(id(grad.node))
            name = _name(grad.node)
            for node in _own_nodes(grad.node):
                if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                        and node.func.attr == "numpy" and not node.args):
                    self._add(
                        "GC006", node,
                        f".numpy() in gradient function {name!r} ({grad.why}): it runs in graph mode, "
                        "where tensors are symbolic and have no .numpy()",
                        suggestions.for_numpy_call(name),
                    )

    def _suggest_override_pairs(self) -> None:
        """GC003 findings seen before the override map that names their op type get the op's forward call."""
        if not self.override_pairs:
            return
        ops_by_grad: dict[str | None, str | None] = {}
        for op, grad in self.override_pairs:  # a real op type beats a misspelt key (that is GC007's)
            if grad not in ops_by_grad or (op in self.data.op_types and ops_by_grad[grad] not in self.data.op_types):
                ops_by_grad[grad] = op
        for i, f in enumerate(self.findings):
            if f.rule != "GC003":
                continue
            registered = next((s.name for s in self.registrations if s.line == f.line and s.col == f.col), None)
            if registered in ops_by_grad:
                impl = self.registered_fn.get(registered or "")
                self.findings[i] = dataclasses.replace(f, suggestion=suggestions.for_registered_gradient(
                    registered, impl, ops_by_grad[registered], self.data))


def _real_op_pairs(pairs: list[tuple[str | None, str | None]], data: TFData) -> list[tuple[str | None, str | None]]:
    """The override-map entries worth a rewrite suggestion: misspelt op types get GC007 instead."""
    real: list[tuple[str | None, str | None]] = [(key, value) for key, value in pairs if key in data.op_types]
    return real or pairs


def audit_tree(path: str, tree: ast.Module, source: str, data: TFData, lines: int = 0) -> FileResult:
    """Audit one parsed module (`source` is its text, used to skip statements that cannot matter)."""
    return ModuleAudit(path, tree, source, data, lines).run()


__all__ = ["ModuleAudit", "audit_tree", "Severity"]
