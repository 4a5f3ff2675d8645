"""No string of the library (compat/ but compat/apps/ and `__main__.py`) names a command-line `--flag`.

The library is used from Python, where nobody typed a flag: its messages name the parameter (`jobs=1`), and each
app says them with its flag (`compat.apps._flag_text.flag_message`). Read from the source with `ast`: docstrings
(documentation, not messages) and the arguments of flag definitions (`add_argument`, `addoption`, absl's
`DEFINE_*`) are not scanned; CSS custom properties (`--same:#cdebd5`, `var(--ink)`) are not flags. Anything else
that must name a flag is listed in ALLOWED with the reason.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "compat"
FLAG = re.compile(r"(?<![\w-])(?<!var\()--[a-z][a-z0-9_-]*(?![\w-])(?!:\S)")
_CHILD = "the command line of a child process gradcompat starts itself, not a message"
ALLOWED: dict[tuple[str, str], str] = {
    **{("compat/verify/_runner.py", flag): _CHILD
       for flag in ("--side", "--module", "--job_dir", "--timeout_s", "--deadline", "--package_root", "--package",
                    "--path")},
    ("compat/contexts/saved_model.py", "--serve"): _CHILD,
    ("compat/contexts/saved_model_loader.py", "--serve"): "that child's own command line and usage line",
    ("compat/testing/plugin.py", "--gradcompat-variants"): "the name of the pytest option the plugin defines",
    ("compat/audit/rules.py", "--exclude"): "report text (GC000's help, in every SARIF audit report): changing it "
    "changes report bytes; still to do",
    **{("compat/reports/summary.py", flag): "report text (the table summary points compat-check's reader at the "
       "flags that show more): changing it changes every table report; still to do"
       for flag in ("--details", "--format", "--output")},
}


def _skipped(tree: ast.Module) -> set[int]:
    """The string constants not scanned: docstrings (of modules, classes, functions and attributes) and every
    argument of a flag definition."""
    skipped: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body:
            pairs = [(None, body[0])] if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef,
                                                           ast.AsyncFunctionDef)) else []
            after = zip(body, body[1:], strict=False)
            pairs += [(prev, stmt) for prev, stmt in after if isinstance(prev, (ast.Assign, ast.AnnAssign))]
            skipped.update(id(stmt.value) for _, stmt in pairs
                           if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant))
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in ("add_argument", "addoption") or name.startswith("DEFINE"):
                skipped.update(id(inner) for arg in [*node.args, *node.keywords] for inner in ast.walk(arg))
    return skipped


def _flags_named() -> list[tuple[str, int, str]]:
    """(file, line, flag) of every flag a scanned string of the library names."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if "apps" in path.relative_to(PACKAGE).parts or path.name == "__main__.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skipped = _skipped(tree)
        relative = path.relative_to(PACKAGE.parent).as_posix()
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skipped:
                found += [(relative, node.lineno, flag) for flag in FLAG.findall(node.value)]
    return found


def test_no_library_string_names_a_command_line_flag():
    named = [f"{path}:{line}: {flag}" for path, line, flag in _flags_named() if (path, flag) not in ALLOWED]
    assert not named, ("library strings name command-line flags; say the parameter (e.g. `jobs=1`) and let the "
                       "app say its flag (compat.apps._flag_text):\n" + "\n".join(named))


def test_every_allowed_flag_is_still_named():
    named = {(path, flag) for path, _, flag in _flags_named()}
    assert not sorted(set(ALLOWED) - named), "no longer named: delete them from ALLOWED"


def test_the_scan_finds_a_flag_in_a_message_but_not_in_css_or_a_definition(tmp_path):
    tree = ast.parse('"""Docs: --doc."""\nx = f"run with --jobs=1 ({y})"\ncss = ":root { --ink:#000 } a { color: '
                     'var(--ink) }"\nflags.DEFINE_bool("strict", False, "see --help")\ne = "--entries: bad"\n')
    skipped = _skipped(tree)
    strings = [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
               and id(n) not in skipped]
    assert sorted(flag for text in strings for flag in FLAG.findall(text)) == ["--entries", "--jobs"]
