"""The registry of audit rules: stable ids, names, severities and help text (SARIF `tool.driver.rules`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from types import MappingProxyType

from compat.audit.findings import Severity


@dataclasses.dataclass(frozen=True)
class Rule:
    """One audit rule. `help` says what to do about a finding; it is shown in SARIF and markdown output."""

    id: str
    name: str
    severity: Severity
    short: str
    description: str
    help: str


_CHECK = "Run the spec through `compat-check` to see what each mechanism hands the gradient."

_RULES: tuple[Rule, ...] = (
    Rule(
        "GC000", "unparseable-file", Severity.ERROR,
        "File could not be read or parsed",
        "The file could not be read, decoded or parsed as Python 3 (syntax error, Python 2 code, invalid "
        "encoding, binary content, or too large). It was not audited, so legacy patterns in it are unknown.",
        "Fix the syntax or encoding (Python 2 files: port them first, e.g. with `2to3`), or exclude the "
        "file with `--exclude` if it is not code you ship.",
    ),
    Rule(
        "GC001", "defun-grad-func", Severity.WARNING,
        "Defun with grad_func",
        "`Defun(..., grad_func=...)` attaches a gradient to a graph function. `Defun` does not exist in TF2.",
        "Rewrite as `@tf.custom_gradient` returning `(y, grad)`. " + _CHECK + " Known differences to "
        "check: with Defun unused outputs get zeros, not None; IndexedSlices upstreams arrive densified.",
    ),
    Rule(
        "GC002", "defun-python-grad-func", Severity.WARNING,
        "Defun with python_grad_func",
        "`Defun(..., python_grad_func=...)` attaches a Python gradient `f(op, *grads)` to a graph function. "
        "`Defun` does not exist in TF2.",
        "Rewrite as `@tf.custom_gradient`; replace `op.inputs[i]` / `op.outputs[i]` with the captured "
        "inputs and outputs. " + _CHECK,
    ),
    Rule(
        "GC003", "register-gradient", Severity.WARNING,
        "RegisterGradient",
        "`RegisterGradient(\"Name\")` registers a graph-mode gradient function `f(op, grad)` under a name; "
        "it only takes effect through `gradient_override_map` or for a new op type.",
        "Rewrite the overridden computation as `@tf.custom_gradient`. " + _CHECK,
    ),
    Rule(
        "GC004", "gradient-override-map", Severity.WARNING,
        "gradient_override_map",
        "`Graph.gradient_override_map({...})` swaps the gradient of ops by type inside a graph.",
        "Under a `tf.GradientTape` (eager or in `tf.function`) the override may be silently ignored: tapes "
        "look gradients up by the real op type. Use `@tf.custom_gradient` around the op. " + _CHECK,
    ),
    Rule(
        "GC005", "tf1-only-api", Severity.WARNING,
        "TF1-only API in a file with legacy or custom gradients",
        "A TF1 API that TF2 keeps only under `tf.compat.v1` (graph/session APIs such as "
        "`tf.get_default_graph`, `tf.Session`, `tf.placeholder`, `tf.py_func`), used in a file that also uses "
        "legacy gradient patterns. Spelled `tf.X` it is an AttributeError in TF2; spelled `tf.compat.v1.X` it "
        "runs, but graph-only APIs then act on a graph that eager code and tf.GradientTape do not use. In a file "
        "whose gradients are `tf.custom_gradient` only (migrated code), only the `tf.X` spellings are reported: "
        "they crash the forward or the gradient in TF2.",
        "Replace with the TF2 equivalent (`tf.function`, eager tensors, `tf.py_function`), or keep it "
        "consciously under `tf.compat.v1` while migrating.",
    ),
    Rule(
        "GC006", "numpy-in-graph-gradient", Severity.ERROR,
        ".numpy() in a graph-mode gradient",
        "`.numpy()` is called in a gradient function that runs in graph mode (registered with "
        "RegisterGradient, passed as grad_func/python_grad_func, or a custom_gradient used inside "
        "tf.function). Symbolic tensors have no value there: it raises at trace time.",
        "Use TensorFlow ops on the tensor, or wrap the NumPy part in `tf.py_function`.",
    ),
    Rule(
        "GC007", "unknown-override-op-type", Severity.ERROR,
        "Override-map key is not a TensorFlow op type",
        "A `gradient_override_map` key that is not an op type in TensorFlow's op registry is silently "
        "ignored (e.g. `\"Matmul\"` for `\"MatMul\"`). As a note (lower severity), a map value that names a "
        "gradient registered neither in the scanned tree nor by TensorFlow itself.",
        "Use the exact op type (case-sensitive, see `tf.raw_ops`); register the gradient name the map "
        "points to, or scan the tree that registers it.",
    ),
    Rule(
        "GC008", "duplicate-gradient-registration", Severity.ERROR,
        "Gradient name registered twice",
        "The same gradient name is registered more than once in the scanned tree; TensorFlow raises "
        "`KeyError: Registering two gradient with name ...` when the second module is imported.",
        "Give each registration a unique name, or register once in a shared module.",
    ),
)

RULES: Mapping[str, Rule] = MappingProxyType({rule.id: rule for rule in _RULES})
