"""BUILD cannot rot: every module, data file, app and test file has a Bazel target with the right deps.

`bazel test //...` (tools/bazel_test.sh) is the real check, but it is slow and CI may skip it; this test
runs with the rest of pytest. It evaluates BUILD the way Bazel would: BUILD is kept to the part of
Starlark that is also Python (literals, globs, comprehensions), so after an `ast` check that it stays
there it runs as Python with each rule recording its target and `glob` following Bazel's rules.
"""

from __future__ import annotations

import ast
import builtins
import configparser
import fnmatch
import importlib.util
import os
import shutil
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

# Not resolved: under Bazel this is the runfiles tree, which holds the files BUILD gives this test.
REPO = Path(__file__).absolute().parent.parent
RUNNER = "tools/bazel_pytest.py"
LIBRARY = ":compat"
TEST_SUPPORT = ":test_support"

# The rules BUILD may call; anything else would need a `load` this test does not follow.
RULES = ("exports_files", "filegroup", "package", "py_binary", "py_library", "py_test")
# Starlark builtins BUILD may use, with the same meaning in Python.
BUILTINS: dict[str, Any] = {
    name: getattr(builtins, name)
    for name in ("all", "any", "bool", "dict", "enumerate", "int", "len", "list", "range", "sorted", "str")
}
# Python that is not Starlark, or that a BUILD file may not use.
NOT_STARLARK = (
    ast.AsyncFunctionDef,
    ast.Assert,
    ast.Await,
    ast.ClassDef,
    ast.Delete,
    ast.FunctionDef,
    ast.Global,
    ast.Import,
    ast.ImportFrom,
    ast.JoinedStr,
    ast.Lambda,
    ast.NamedExpr,
    ast.Nonlocal,
    ast.Raise,
    ast.Set,
    ast.SetComp,
    ast.Try,
    ast.While,
    ast.With,
    ast.Yield,
    ast.YieldFrom,
    ast.Is,
    ast.IsNot,
)


@dataclass(frozen=True)
class Target:
    kind: str
    name: str
    attrs: dict[str, Any]

    def files(self, attr: str) -> list[str]:
        return list(self.attrs.get(attr, []))

    def where(self) -> str:
        return f"{self.kind} `//:{self.name}` in BUILD"


def _matches(pattern: Sequence[str], path: Sequence[str]) -> bool:
    """Bazel glob matching on path segments: `**` is zero or more directories, `*` stays in one."""
    if not pattern:
        return not path
    if pattern[0] == "**":
        return any(_matches(pattern[1:], path[i:]) for i in range(len(path) + 1))
    return bool(path) and fnmatch.fnmatchcase(path[0], pattern[0]) and _matches(pattern[1:], path[1:])


def _is_package_boundary(directory: Path) -> bool:
    return any((directory / marker).exists() for marker in ("BUILD", "BUILD.bazel", "WORKSPACE"))


def _files_under(root: Path, start: Path) -> Iterator[str]:
    """Files below `start` that the root package owns, as paths relative to `root`."""
    if start.is_file():
        yield start.relative_to(root).as_posix()
        return
    for dirpath, dirnames, filenames in os.walk(start):
        here = Path(dirpath)
        dirnames[:] = [
            d for d in dirnames if d != ".git" and not d.startswith("bazel-") and not _is_package_boundary(here / d)
        ]
        for filename in filenames:
            yield (here / filename).relative_to(root).as_posix()


def bazel_glob(root: Path, include: Sequence[str], exclude: Sequence[str] = ()) -> list[str]:
    """What Bazel's `glob(include, exclude)` returns in the package at `root`: files only, sorted."""
    found: set[str] = set()
    for pattern in include:
        segments = pattern.split("/")
        literal = []
        for segment in segments:
            if any(c in segment for c in "*?["):
                break
            literal.append(segment)
        start = root.joinpath(*literal)
        if not start.exists():
            continue
        for path in _files_under(root, start):
            parts = path.split("/")
            if _matches(segments, parts) and not any(_matches(x.split("/"), parts) for x in exclude):
                found.add(path)
    return sorted(found)


def check_starlark_subset(tree: ast.AST, filename: str) -> None:
    for node in ast.walk(tree):
        if isinstance(node, NOT_STARLARK):
            raise AssertionError(
                f"{filename}:{getattr(node, 'lineno', '?')}: `{type(node).__name__}` is not allowed in a "
                "BUILD file (or not Starlark); keep BUILD to literals, globs and comprehensions."
            )


def load_build(root: Path) -> dict[str, Target]:
    """Evaluates `root/BUILD` and returns its targets by name."""
    source = (root / "BUILD").read_text()
    tree = ast.parse(source, "BUILD")
    check_starlark_subset(tree, "BUILD")
    targets: dict[str, Target] = {}

    def rule(kind: str) -> Callable[..., None]:
        def record(**attrs: Any) -> None:
            if kind in ("package", "exports_files"):
                return
            name = attrs["name"]
            assert name not in targets, f"BUILD defines `//:{name}` twice ({targets[name].kind} and {kind})"
            targets[name] = Target(kind, name, attrs)

        return record

    def glob(include: Sequence[str], exclude: Sequence[str] = (), **_: Any) -> list[str]:
        return bazel_glob(root, include, exclude)

    scope: dict[str, Any] = {"__builtins__": BUILTINS, "glob": glob}
    scope.update({kind: rule(kind) for kind in RULES})
    exec(compile(tree, "BUILD", "exec"), scope)  # noqa: S102 - BUILD is this repository's own file
    return targets


def repo_files(*patterns: str, exclude: Sequence[str] = ()) -> list[str]:
    """The files on disk, found without BUILD's help (a nested BUILD file would hide some from glob)."""
    found = []
    for path in sorted(p for pattern in patterns for p in REPO.glob(pattern) if p.is_file()):
        rel = path.relative_to(REPO).as_posix()
        if "__pycache__" not in rel.split("/") and not any(fnmatch.fnmatchcase(rel, x) for x in exclude):
            found.append(rel)
    return found


def app_modules() -> list[str]:
    return repo_files("compat/apps/*.py", exclude=["compat/apps/__init__.py", "compat/apps/_*.py"])


# Test data is never a test, whatever its name (the real-code corpus holds other projects' files).
TEST_DATA = "tests/data/*"


def pytest_files() -> list[str]:
    return repo_files("tests/**/test_*.py", exclude=[TEST_DATA])


def resolve(targets: dict[str, Target], labels: Sequence[str]) -> set[str]:
    """The files `labels` stand for, following `:name` labels to filegroups and libraries."""
    files: set[str] = set()
    for label in labels:
        if label.startswith(":"):
            target = targets[label[1:]]
            files |= resolve(targets, target.files("srcs") + target.files("data"))
        else:
            files.add(label)
    return files


@pytest.fixture(scope="module")
def targets() -> dict[str, Target]:
    return load_build(REPO)


def of_kind(targets: dict[str, Target], kind: str) -> list[Target]:
    return [t for t in targets.values() if t.kind == kind]


def test_library_has_every_module(targets: dict[str, Target]) -> None:
    library = targets[LIBRARY[1:]]
    missing = sorted(set(repo_files("compat/**/*.py")) - set(library.files("srcs")))
    assert not missing, f"{library.where()} misses {missing}; its srcs glob must cover compat/**/*.py"
    assert "." in library.attrs.get("imports", []), "py_library `compat` must keep imports = ['.']"


def test_library_ships_package_data(targets: dict[str, Target]) -> None:
    library = targets[LIBRARY[1:]]
    data = set(library.files("data"))
    missing = sorted(set(repo_files("compat/data/*", "compat/py.typed")) - data)
    assert not missing, f"{library.where()} misses package data {missing}; add them to its data glob"
    stray = sorted(p for p in data if not (REPO / p).is_file())
    assert not stray, f"{library.where()} names files that do not exist: {stray}"


def test_every_app_has_a_binary(targets: dict[str, Target]) -> None:
    binaries = {t.attrs.get("main"): t for t in of_kind(targets, "py_binary")}
    for app in app_modules():
        stem = Path(app).stem
        binary = binaries.get(app)
        assert binary is not None, f"no py_binary in BUILD has main = {app!r}; every app gets one"
        assert binary.name == f"compat-{stem}", f"{binary.where()} should be named `compat-{stem}`"
        assert app in binary.files("srcs"), f"{binary.where()} must list {app} in srcs"
        assert LIBRARY in binary.files("deps"), f"{binary.where()} must depend on {LIBRARY}"
    stale = sorted(set(binaries) - set(app_modules()))
    assert not stale, f"py_binary targets in BUILD run apps that do not exist: {stale}"


def test_every_test_module_has_a_py_test(targets: dict[str, Target]) -> None:
    tests = of_kind(targets, "py_test")
    by_file = {file: t for t in tests for file in t.files("args")}
    for module in pytest_files():
        test = by_file.get(module)
        assert test is not None, f"no py_test in BUILD runs {module}; its glob must cover tests/**/test_*.py"
        assert test.name == module.removesuffix(".py"), f"{test.where()} should be named `{module[:-3]}`"
        assert test.attrs.get("main") == RUNNER, f"{test.where()} must run pytest through {RUNNER}"
        assert {module, RUNNER} <= set(test.files("srcs")), f"{test.where()} needs srcs {module}, {RUNNER}"
        assert LIBRARY in test.files("deps"), f"{test.where()} must depend on {LIBRARY}"
        assert TEST_SUPPORT in test.files("data"), f"{test.where()} must have data {TEST_SUPPORT}"
    stale = sorted(set(by_file) - set(pytest_files()))
    assert not stale, f"py_test targets in BUILD run files that do not exist: {stale}"


def test_tests_see_conftest_helpers_and_fixtures(targets: dict[str, Target]) -> None:
    support = resolve(targets, [TEST_SUPPORT])
    needed = (set(repo_files("tests/**/*", exclude=["*.pyc"])) - set(pytest_files())) | {"pyproject.toml"}
    missing = sorted(needed - support)
    assert not missing, f"filegroup `{TEST_SUPPORT}` misses {missing}; Bazel tests could not read them"


def test_no_test_module_imports_another_test_module(targets: dict[str, Target]) -> None:
    """A py_test gets its own file and test_support only: shared helpers belong in a conftest.py."""
    tests = set(pytest_files())
    imports = {}
    for module in tests:
        for node in ast.walk(ast.parse((REPO / module).read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("tests."):
                imported = node.module.replace(".", "/") + ".py"
                if imported in tests and imported not in resolve(targets, targets[module[:-3]].files("data")):
                    imports[module] = imported
    assert not imports, f"move what they share into a conftest.py (Bazel gives no test another's file): {imports}"


@pytest.mark.parametrize(
    ("test_file", "needs"),
    [
        ("tests/test_build_file.py", ["BUILD", "WORKSPACE", "setup.cfg", RUNNER, "compat/**/*"]),
        (
            "tests/test_packaging.py",
            ["LICENSE", "pyproject.toml", "setup.cfg", "README.md", "MANIFEST.in", "compat/**/*"],
        ),
        ("tests/testing/test_plugin.py", ["setup.cfg"]),
        ("tests/test_migration_guide.py", ["migration_guide.md", "tools/gen_migration_guide.py", "tools/guide/*"]),
        ("tests/guide/test_tables.py", ["tools/guide/*"]),
        ("tests/testing/test_readme.py", ["README.md"]),
    ],
)
def test_tests_that_read_the_tree_get_it(targets: dict[str, Target], test_file: str, needs: list[str]) -> None:
    test = targets[test_file.removesuffix(".py")]
    files = resolve(targets, test.files("data") + test.files("deps"))
    missing = sorted(set(repo_files(*needs)) - files)
    assert not missing, f"{test.where()} reads {missing} but its data does not include them"


def test_test_data_named_like_a_test_is_support_not_a_test(tmp_path: Path) -> None:
    # The real-code corpus stores other projects' files; `test_*.py` among them must not become py_test targets.
    shutil.copy(REPO / "BUILD", tmp_path / "BUILD")
    for path in ("tests/audit/test_rules.py", "tests/data/real/owner__repo/test_ops.py", "tests/data/legacy/ste.py"):
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text("")
    targets = load_build(tmp_path)
    tests = sorted(t.name for t in of_kind(targets, "py_test"))
    assert tests == ["tests/audit/test_rules"], f"BUILD makes py_test targets of test data: {tests}"
    support = resolve(targets, [TEST_SUPPORT])
    assert {"tests/data/real/owner__repo/test_ops.py", "tests/data/legacy/ste.py"} <= support, sorted(support)


def test_labels_resolve_and_files_exist(targets: dict[str, Target]) -> None:
    for target in targets.values():
        for attr in ("srcs", "data", "deps"):
            for label in target.files(attr):
                if label.startswith(":"):
                    assert label[1:] in targets, f"{target.where()} {attr} names undefined target {label}"
                else:
                    assert (REPO / label).is_file(), f"{target.where()} {attr} names missing file {label}"


def test_no_nested_package_hides_files_from_globs() -> None:
    # A BUILD or WORKSPACE file below the root makes a new package: the root's globs skip it silently.
    nested = sorted(
        p.relative_to(REPO).as_posix()
        for top in ("compat", "tests", "tools")
        for marker in ("BUILD", "BUILD.bazel", "WORKSPACE")
        for p in (REPO / top).rglob(marker)
    )
    assert not nested, f"these files would hide their directories from BUILD's globs: {nested}"


def test_workspace_repositories_are_in_the_tree() -> None:
    # Offline Bazel: every repository the WORKSPACE defines is a directory of this tree. Those
    # directories are repositories of their own, outside BUILD's globs and so outside Bazel's runfiles:
    # look in the source tree the WORKSPACE symlink leads to.
    source = (REPO / "WORKSPACE").resolve().parent
    tree = ast.parse((source / "WORKSPACE").read_text(), "WORKSPACE")
    check_starlark_subset(tree, "WORKSPACE")
    repos = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "local_repository":
            kwargs = {k.arg: ast.literal_eval(k.value) for k in node.keywords}
            repos[kwargs["name"]] = kwargs["path"]
    assert {"rules_cc", "rules_java", "remote_coverage_tools"} <= set(repos), (
        f"WORKSPACE must define the offline stand-ins; it defines {sorted(repos)}"
    )
    for name, path in repos.items():
        assert not path.startswith("/"), f"repository @{name} must live in this tree, not at {path}"
        assert (source / path / "WORKSPACE").is_file(), f"repository @{name}: {path}/WORKSPACE is missing"
    for forbidden in ("http_archive", "git_repository", "pip_install", "pip_parse"):
        assert forbidden not in (source / "WORKSPACE").read_text(), f"WORKSPACE must not fetch ({forbidden})"


def test_package_data_in_setup_cfg_matches_build(targets: dict[str, Target]) -> None:
    # The wheel and the Bazel library ship the same data files.
    config = configparser.ConfigParser()
    config.read(REPO / "setup.cfg")
    patterns = [p.strip() for p in config["options.package_data"]["compat"].split(",") if p.strip()]
    shipped = {p for pattern in patterns for p in repo_files(f"compat/{pattern}")}
    bazel = set(targets[LIBRARY[1:]].files("data"))
    assert bazel == shipped, (
        f"BUILD ships {sorted(bazel - shipped)} that setup.cfg's package_data does not, and setup.cfg "
        f"ships {sorted(shipped - bazel)} that BUILD does not"
    )


def _load_runner() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bazel_pytest", REPO / RUNNER)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_runner_forwards_what_bazel_asks_of_a_test() -> None:
    runner = _load_runner()
    env = {"TEST_TMPDIR": "/scratch", "XML_OUTPUT_FILE": "/out/test.xml", "TESTBRIDGE_TEST_ONLY": "jit"}
    args = runner.pytest_args(["tests/test_spec.py"], env)
    assert args[0] == "tests/test_spec.py"
    assert "--basetemp=/scratch/pytest" in args
    assert "--junitxml=/out/test.xml" in args
    assert args[-2:] == ["-k", "jit"]
    assert ["-p", "no:cacheprovider"] == args[1:3], "pytest must not write its cache into runfiles"
    assert runner.pytest_args(["tests/test_spec.py"], {}) == ["tests/test_spec.py", "-p", "no:cacheprovider"]
    assert runner.main([]) == 2


def test_bazel_test_script_is_executable() -> None:
    assert os.access(REPO / "tools" / "bazel_test.sh", os.X_OK), "chmod +x tools/bazel_test.sh"


def test_glob_follows_bazel_rules(tmp_path: Path) -> None:
    for path in ("a.py", "pkg/b.py", "pkg/deep/c.py", "pkg/deep/__pycache__/c.pyc", "sub/BUILD", "sub/d.py"):
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text("")
    assert bazel_glob(tmp_path, ["**/*.py"]) == ["a.py", "pkg/b.py", "pkg/deep/c.py"]
    assert bazel_glob(tmp_path, ["pkg/*.py"]) == ["pkg/b.py"]
    assert bazel_glob(tmp_path, ["pkg/**"], exclude=["**/deep/**"]) == ["pkg/b.py"]
    assert bazel_glob(tmp_path, ["missing/**"]) == []
