"""The sdist and wheel a user installs hold every module and data file, and their console scripts run.

Builds with `python -m build --no-isolation` (the wheel is built from the sdist, so a file the sdist
forgets fails here too), then installs the wheel with `--no-deps` into a fresh venv that borrows
TensorFlow and the other dependencies from this interpreter through a `.pth` file. Every check runs from
a scratch directory, so the repository's own `compat/` can never stand in for the installed one.
"""

from __future__ import annotations

import ast
import configparser
import email
import email.message
import importlib.util
import os
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import tomllib
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest

# Not resolved: under Bazel this is the runfiles tree, which holds the files BUILD gives this test.
REPO = Path(__file__).absolute().parent.parent
DIST_NAME = "gradcompat"
PACKAGE = "compat"
# What setuptools reads; README.md and MANIFEST.in are copied when they exist.
PROJECT_FILES = ("setup.cfg", "pyproject.toml", "LICENSE", "README.md", "MANIFEST.in")
REQUIRED_DEPENDENCY = ("tensorflow-cpu", ">=2.12")
INSTALL_HINT = "pip install -e '.[test]'"
SUBPROCESS_TIMEOUT_S = 180
# absl's `--help` prints usage and exits 1 (absl/app.py HelpFlag); a plain argparse app exits 0.
HELP_EXIT_CODES = (0, 1)


@dataclass(frozen=True)
class Built:
    sdist: Path
    wheel: Path


@dataclass(frozen=True)
class Installed:
    venv: Path
    python: Path
    scratch: Path  # an empty working directory, far from the repository


def _run(
    args: list[str | os.PathLike[str]], *, cwd: Path, env: dict[str, str] | None = None, what: str
) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [str(a) for a in args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=SUBPROCESS_TIMEOUT_S,
    )
    if what and result.returncode != 0:
        pytest.fail(f"{what} failed (exit {result.returncode}):\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}")
    return result


def _clean_env() -> dict[str, str]:
    """This process's environment minus whatever would let Python find the repository's `compat`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV", "PIP_"))}
    env.update(
        PYTHONNOUSERSITE="1",
        PIP_NO_INDEX="1",
        PIP_NO_CACHE_DIR="1",
        PIP_DISABLE_PIP_VERSION_CHECK="1",
        TF_CPP_MIN_LOG_LEVEL="3",
    )
    return env


def repo_files(pattern: str) -> list[str]:
    return sorted(
        p.relative_to(REPO).as_posix() for p in REPO.glob(pattern) if p.is_file() and "__pycache__" not in p.parts
    )


def app_modules() -> list[str]:
    """Module names of the apps: every compat/apps/*.py but __init__.py."""
    return [
        f"{PACKAGE}.apps.{Path(p).stem}" for p in repo_files(f"{PACKAGE}/apps/*.py") if not Path(p).name.startswith("_")
    ]


def script_name(module: str) -> str:
    return "compat-" + module.rsplit(".", 1)[-1]


def repo_version() -> str:
    tree = ast.parse((REPO / PACKAGE / "_version.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__version__" for t in node.targets):
            return ast.literal_eval(node.value)
    raise AssertionError(f"{PACKAGE}/_version.py does not assign __version__")


def defined_flags(module: str) -> list[str]:
    """Names of the absl flags the app module defines itself (`flags.DEFINE_*("name", ...)`)."""
    tree = ast.parse((REPO / (module.replace(".", "/") + ".py")).read_text())
    names = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if not called.startswith("DEFINE_"):
            continue
        name = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "name"), None)
        if isinstance(name, ast.Constant) and isinstance(name.value, str):
            names.append(name.value)
    return names


def wheel_metadata(wheel: Path) -> tuple[email.message.Message, configparser.ConfigParser]:
    with zipfile.ZipFile(wheel) as zf:
        dist_info = next(n.split("/")[0] for n in zf.namelist() if n.split("/")[0].endswith(".dist-info"))
        metadata = email.message_from_string(zf.read(f"{dist_info}/METADATA").decode())
        entry_points = configparser.ConfigParser(delimiters=("=",))
        entry_points.optionxform = str  # type: ignore[assignment,method-assign]
        if f"{dist_info}/entry_points.txt" in zf.namelist():
            entry_points.read_string(zf.read(f"{dist_info}/entry_points.txt").decode())
    return metadata, entry_points


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    if importlib.util.find_spec("build") is None:
        pytest.fail(f"the `build` package is missing from {sys.executable}; run: {INSTALL_HINT}")
    # Build from a copy: setuptools writes build/ and *.egg-info next to setup.cfg, and under Bazel the
    # runfiles tree is not ours to write.
    source = tmp_path_factory.mktemp("source")
    for name in PROJECT_FILES:
        if (REPO / name).is_file():
            shutil.copy(REPO / name, source / name)
    shutil.copytree(REPO / PACKAGE, source / PACKAGE, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    out = tmp_path_factory.mktemp("dist")
    _run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", out, source],
        cwd=source,
        env=_clean_env(),
        what="python -m build (sdist, then a wheel from the sdist)",
    )
    sdists, wheels = sorted(out.glob("*.tar.gz")), sorted(out.glob("*.whl"))
    assert len(sdists) == 1 and len(wheels) == 1, f"expected one sdist and one wheel, got {sorted(out.iterdir())}"
    return Built(sdist=sdists[0], wheel=wheels[0])


@pytest.fixture(scope="module")
def installed(built: Built, tmp_path_factory: pytest.TempPathFactory) -> Installed:
    venv = tmp_path_factory.mktemp("venv")
    scratch = tmp_path_factory.mktemp("scratch")
    env = _clean_env()
    _run([sys.executable, "-m", "venv", "--clear", "--without-pip", venv], cwd=scratch, env=env, what="venv")
    python = venv / "bin" / "python"
    _run(
        [sys.executable, "-m", "pip", "--python", python, "install", "--no-deps", built.wheel],
        cwd=scratch,
        env=env,
        what="pip install --no-deps of the wheel into a clean venv",
    )
    # The dependencies (TensorFlow, ...) come from this interpreter's site-packages, after the venv's own.
    site = _run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        cwd=scratch,
        env=env,
        what="locate the venv's site-packages",
    ).stdout.strip()
    borrowed = dict.fromkeys([sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]])
    (Path(site) / "_gradcompat_test_deps.pth").write_text("".join(f"{p}\n" for p in borrowed))
    return Installed(venv=venv, python=python, scratch=scratch)


def test_wheel_has_every_module_and_data_file(built: Built) -> None:
    with zipfile.ZipFile(built.wheel) as zf:
        names = set(zf.namelist())
    expected = (repo_files(f"{PACKAGE}/**/*.py") + repo_files(f"{PACKAGE}/data/*") + repo_files(f"{PACKAGE}/py.typed")
                + repo_files(f"{PACKAGE}/reports/*.schema.json"))  # compat-merge and compat.releases read them
    missing = sorted(set(expected) - names)
    assert not missing, (
        f"{built.wheel.name} lacks {missing}. A missing module usually means its directory has no "
        "__init__.py (setup.cfg uses `packages = find:`); a missing data file, that setup.cfg's "
        "[options.package_data] patterns do not match it."
    )


def test_sdist_has_the_project_files(built: Built) -> None:
    with tarfile.open(built.sdist) as tf:
        names = {n.split("/", 1)[1] for n in tf.getnames() if "/" in n}
    expected = [n for n in PROJECT_FILES if (REPO / n).is_file()]
    missing = sorted(set(expected) - names)
    assert not missing, f"{built.sdist.name} lacks {missing}"


def test_metadata_matches_the_source(built: Built) -> None:
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    metadata, _ = wheel_metadata(built.wheel)
    assert metadata["Name"] == DIST_NAME
    assert metadata["Version"] == repo_version(), (
        f"wheel version {metadata['Version']} is not {PACKAGE}._version.__version__ ({repo_version()})"
    )
    assert metadata["Requires-Python"], "setup.cfg must set python_requires"
    requirements = [Requirement(r) for r in metadata.get_all("Requires-Dist", [])]
    runtime = {canonicalize_name(r.name): str(r.specifier) for r in requirements if r.marker is None}
    name, spec = REQUIRED_DEPENDENCY
    assert runtime.get(name) == spec, f"Requires-Dist must include {name}{spec}; it has {runtime}"
    assert {"numpy", "absl-py", "ml-dtypes"} <= set(runtime), f"runtime Requires-Dist lacks a dependency: {runtime}"


def test_requires_python_admits_only_versions_the_code_runs_on(built: Built) -> None:
    # ruff's target-version is the oldest Python the code is written for (pyupgrade rewrites to it).
    from packaging.specifiers import SpecifierSet

    target = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["ruff"]["target-version"]
    major, minor = int(target[2]), int(target[3:])
    metadata, _ = wheel_metadata(built.wheel)
    allowed = SpecifierSet(metadata["Requires-Python"])
    assert f"{major}.{minor}" in allowed, f"Requires-Python {allowed} excludes {major}.{minor}, the ruff target"
    assert f"{major}.{minor - 1}" not in allowed, (
        f"Requires-Python {allowed} admits Python {major}.{minor - 1}, but the code targets {target} "
        f"(pyproject.toml [tool.ruff]); set python_requires = >={major}.{minor} in setup.cfg"
    )


def test_test_extra_can_run_this_test(built: Built) -> None:
    from packaging.requirements import Requirement

    metadata, _ = wheel_metadata(built.wheel)
    test_extra = {Requirement(r).name for r in metadata.get_all("Requires-Dist", []) if 'extra == "test"' in r}
    missing = sorted({"pytest", "build"} - test_extra)
    assert not missing, f"setup.cfg's `test` extra must include {missing}: this test builds the wheel with them"


def test_long_description_is_the_readme(built: Built) -> None:
    config = configparser.ConfigParser()
    config.read(REPO / "setup.cfg")
    readme = config["metadata"]["long_description"].removeprefix("file:").strip()
    assert (REPO / readme).is_file(), f"setup.cfg takes long_description from {readme}, which does not exist"
    metadata, _ = wheel_metadata(built.wheel)
    assert metadata.get_payload().strip(), f"the wheel's METADATA has no long description (from {readme})"


def test_every_app_has_a_console_script(built: Built) -> None:
    _, entry_points = wheel_metadata(built.wheel)
    scripts = dict(entry_points["console_scripts"]) if entry_points.has_section("console_scripts") else {}
    for module in app_modules():
        script = script_name(module)
        assert scripts.get(script) == f"{module}:run", (
            f"app {module} needs the console script `{script} = {module}:run` in setup.cfg; the wheel has {scripts}"
        )
    stale = sorted(s for s, target in scripts.items() if target.split(":")[0] not in app_modules())
    assert not stale, f"console scripts point at app modules that do not exist in {PACKAGE}/apps: {stale}"


def test_installed_package_is_the_wheel(installed: Installed) -> None:
    probe = "import compat, importlib.metadata as m; print(compat.__file__); print(m.version('gradcompat'))"
    out = _run(
        [installed.python, "-c", probe],
        cwd=installed.scratch,
        env=_clean_env(),
        what="import compat from the clean venv",
    ).stdout.split()
    location, version = Path(out[0]), out[1]
    assert location.is_relative_to(installed.venv), (
        f"`import compat` found {location}, not the wheel installed in {installed.venv}"
    )
    assert version == repo_version()


@pytest.mark.parametrize("module", app_modules())
def test_console_script_help(installed: Installed, module: str) -> None:
    script = installed.venv / "bin" / script_name(module)
    assert script.is_file(), f"the wheel installed no `{script.name}` script for {module}"
    result = _run([script, "--help"], cwd=installed.scratch, env=_clean_env(), what="")
    output = result.stdout + result.stderr
    assert result.returncode in HELP_EXIT_CODES and "Traceback" not in result.stderr, (
        f"`{script.name} --help` exited {result.returncode}:\n{output[-4000:]}"
    )
    assert result.stdout.strip(), f"`{script.name} --help` printed nothing on stdout:\n{output[-4000:]}"
    missing = [f"--{flag}" for flag in defined_flags(module)
               if f"--{flag}" not in output and f"--[no]{flag}" not in output]
    assert not missing, (
        f"`{script.name} --help` does not mention {missing}. A console script's main module is the "
        f"wrapper, so absl's --help lists only its key flags: have {module}.run() register the module's "
        "flags for sys.argv[0] (FLAGS.register_key_flag_for_module) before app.run(main).\n"
        f"{output[-4000:]}"
    )
