"""The public API: every name in compat.__all__ resolves, and importing compat does not import TensorFlow."""

import ast
import json
import os
import pathlib
import re
import subprocess
import sys

import compat


def test_every_public_name_resolves():
    for name in compat.__all__:
        assert getattr(compat, name) is not None, name
    assert sorted(dir(compat)) == sorted(compat.__all__)


def test_unknown_names_list_the_public_ones():
    try:
        compat.no_such_name  # noqa: B018
    except AttributeError as error:
        assert "public names" in str(error) and "GradientSpec" in str(error)
    else:
        raise AssertionError("expected AttributeError")


def test_import_is_cheap():
    code = "import sys, compat; print('tensorflow' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True).stdout.strip() == "False"


def test_public_submodules_are_reachable_from_import_compat_alone():
    """README shows `import compat; compat.testing.assert_native_variants_agree(...)`: a fresh process."""
    code = ("import sys, compat; print(callable(compat.audit.audit_paths), 'tensorflow' in sys.modules, "
            "callable(compat.testing.assert_native_variants_agree), callable(compat.reports.render))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["True", "False", "True", "True"]  # the audit alone never imports TensorFlow


_README = pathlib.Path(__file__).resolve().parent.parent / "README.md"
_RESOLVE = """
import importlib, json, sys
import compat

def public(dotted):  # attribute by attribute from `import compat` alone, as a user's code reaches it
    value = compat
    for part in dotted.split(".")[1:]:
        value = getattr(value, part)
    return value

def anywhere(dotted):  # a module path, or the longest importable module then attributes
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            value = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for part in parts[cut:]:
            value = getattr(value, part)
        return value
    raise ImportError(dotted)

failed = {}
for dotted, called in json.loads(sys.argv[1]):
    parts = dotted.split(".")
    # Public: called in the README (user code) or a name of compat.__all__, with no private part (a private one,
    # as in `python -m compat.distribute._worker`, is a module path).
    reach = public if (called or parts[1] in compat.__all__) and not any(p.startswith("_") for p in parts) else anywhere
    try:
        reach(dotted)
    except (AttributeError, ImportError) as exc:
        failed[dotted] = repr(exc)
print(json.dumps(failed))
"""


def test_every_compat_name_in_the_readme_resolves():
    """`compat.X` and `compat.sub.X` in README.md: public ones (called, or exported) reachable after `import compat`
    alone (a fresh process), the others (module paths, internals the README points at) importable."""
    text = _README.read_text(encoding="utf-8")
    found = re.finditer(r"(?<![\w.])(compat(?:\.[A-Za-z_][A-Za-z0-9_]*)+)(\()?", text)  # not tf.compat.v1
    names = sorted({(match[1], bool(match[2])) for match in found})
    assert ("compat.distribute.use_logical_cpus", True) in names and ("compat.check", True) in names
    out = subprocess.run([sys.executable, "-c", _RESOLVE, json.dumps(names)], capture_output=True, text=True,
                         check=True).stdout
    assert json.loads(out.strip().splitlines()[-1]) == {}
    # Resolving one name imports modules that make others reachable: each submodule the README reaches from
    # `compat.` is checked in a process of its own.
    submodules = sorted({dotted.split(".")[1] for dotted, called in names if dotted.count(".") > 1 and called})
    for submodule in submodules:
        code = f"import compat; compat.{submodule}"
        assert subprocess.run([sys.executable, "-c", code], capture_output=True).returncode == 0, code


def test_type_checking_imports_name_every_lazy_export():
    """Type checkers read the `if TYPE_CHECKING:` imports; `__getattr__` serves `_EXPORTS`: the same names."""
    tree = ast.parse(pathlib.Path(compat.__file__).read_text(encoding="utf-8"))
    block = next(node for node in tree.body if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING")
    imported = {alias.asname or alias.name for node in block.body if isinstance(node, ast.ImportFrom)
                for alias in node.names}
    assert imported == set(compat.__all__) - {"__version__"}
    for node in block.body:
        assert isinstance(node, ast.ImportFrom)
        for alias in node.names:
            if node.module != "compat":
                assert compat._EXPORTS[alias.name] == node.module, alias.name


_SNIPPET = """
import compat

report = compat.check([compat.catalogue.scaled_ste()])
reveal_type(report)
reveal_type(compat.distribute.use_logical_cpus)
report.no_such_attribute
try:
    compat.load_specs(["nope"])
except compat.Error as error:
    reveal_type(error)
"""


def test_type_checkers_see_the_public_api_not_any(tmp_path):
    """A user's snippet under mypy: the real types are revealed and misusing a result is an error."""
    snippet = tmp_path / "user_code.py"
    snippet.write_text(_SNIPPET, encoding="utf-8")
    root = pathlib.Path(compat.__file__).resolve().parent.parent
    env = {**os.environ, "PYTHONPATH": str(root), "MYPYPATH": str(root)}
    result = subprocess.run([sys.executable, "-m", "mypy", "--no-incremental", "--cache-dir", os.devnull,
                             "--config-file", str(root / "setup.cfg"), str(snippet)],
                            capture_output=True, text=True, env=env, cwd=tmp_path)
    # mypy 1.10, which pip picks beside TensorFlow 2.12 (typing-extensions < 4.6), spells types longhand
    revealed = [re.sub(r"Union\[(.*), None\]", r"\1 | None", found.replace("builtins.", ""))
                for found in re.findall(r'Revealed type is "(.*)"', result.stdout)]
    assert revealed == ["compat.checker.CheckReport", "def (count: int =) -> str | None", "compat.errors.Error"], \
        result.stdout
    assert '"CheckReport" has no attribute "no_such_attribute"' in result.stdout, result.stdout
    assert result.stdout.count("error:") == 1, result.stdout
