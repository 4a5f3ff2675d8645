"""Nox sessions: gradcompat's tests and checks across TensorFlow releases 2.12 ... 2.21.

Each TensorFlow release gets its own virtualenv (Python 3.11, stdlib venv), named after the release:

    nox -l                                  # list the sessions
    nox                                     # the quick defaults: lint, tests-2.21
    nox -s tests-2.12                       # the whole test suite on TensorFlow 2.12
    nox -s tests                            # ... on every release, one after the other
    nox -s tests -- -k myspec               # arguments after `--` go to pytest: only tests matching `myspec`
    nox -s tests-2.15 -- tests/test_runner.py -q
    nox -s lint                             # ruff check, mypy compat
    nox -s audit -- --format=markdown       # compat-audit on the installed TensorFlow's own source (informative)
    nox -s check                            # compat-check on every release: reports/check-tf2.XX.json
    nox -s check-2.21 check-2.12            # two releases, then diff the two JSON reports
    nox -s matrix                           # check on every release, merged: reports/matrix.{json,md,html}
    nox -s matrix -- --specs=my_ops.py:MY_SPEC   # the same for your own specs (posargs go to compat-check)
    nox -s matrix-nightly                   # ... plus tf-nightly (also tests-nightly, check-nightly)
    nox -s check-2.21-shard1of3             # shard 1 of 3 of check-2.21: reports/check-tf2.21-shard1of3.json
    nox -s merge                            # merge every report in reports/ (shards joined): CI's merge job

Your own specs. `check` passes its posargs to `compat-check`, so a module defining a GradientSpec (or a
function returning one) can be run on every release and the JSON reports diffed to see what changed:

    nox -s check -- --specs=path/to/my_specs.py:my_spec
    nox -s check-2.12 check-2.21 -- --specs=path/to/my_specs.py:my_spec --dtypes=float32,float16
    diff <(jq -S . reports/check-tf2.12.json) <(jq -S . reports/check-tf2.21.json)

Tests of your own (say tests/test_myspec.py using compat.run) run like the project's: `nox -s tests -- -k myspec`.

Each venv holds a full TensorFlow (about 1 GiB), so venvs are reused between runs; `nox -s tests-2.12 --no-reuse-venv`
(or `nox --reuse-venv=no`) rebuilds one. Pins per release live in EXTRA_PINS below.
"""

from __future__ import annotations

import configparser
import glob
import json
import os
import sys
from collections.abc import Callable

import nox
from nox.command import CommandFailed

PYTHON = "3.11"
TF_VERSIONS = ["2.12", "2.13", "2.14", "2.15", "2.16", "2.17", "2.18", "2.19", "2.20", "2.21"]
"""Every TensorFlow release with Python 3.11 wheels on PyPI (3.11 support started with 2.12)."""

LATEST = TF_VERSIONS[-1]
NIGHTLY = "nightly"
NIGHTLY_PACKAGE = "tf-nightly"
"""`tests-nightly`, `check-nightly`, `matrix-nightly`: TensorFlow's nightly build, offered, never a default."""

EXTRA_PINS: dict[str, list[str]] = {
    # Built against the numpy 1.x C API: with numpy 2 importing TensorFlow fails ("A module that was
    # compiled using NumPy 1.x cannot be run in NumPy 2.x"). Some of these cap numpy in their own metadata
    # already; the cap is written for every release before 2.18 so nothing else can pull numpy 2 in.
    **{version: ["numpy<2"] for version in ("2.12", "2.13", "2.14", "2.15", "2.16", "2.17")},
}
"""TensorFlow release -> pins installed with it, beyond what its own wheel metadata requires."""

CHECK_SHARDS = 3
"""`check-<release>-shard<K>of<N>` sessions split each release's compat-check in this many shards, one CI job each
(ci-templates/github-actions.yml, generated from this file by tools/gen_ci_template.py)."""

nox.options.sessions = ["lint", f"tests-{LATEST}"]
nox.options.reuse_venv = "yes"
nox.options.error_on_missing_interpreters = True

# TensorFlow's C++ start-up logging drowns pytest's output.
_ENV = {"TF_CPP_MIN_LOG_LEVEL": "3"}


def _install(session: nox.Session, tensorflow: str, extras: str = "test") -> None:
    """The package (editable) and the pinned TensorFlow, resolved together so the pins hold.

    `nightly` installs tf-nightly and the package without its declared `tensorflow-cpu` (pip would install
    both, and two TensorFlows in one venv break each other).
    """
    if tensorflow == NIGHTLY:
        session.install(NIGHTLY_PACKAGE, *_requirements(extras))
        session.install("--no-deps", "-e", ".")
    else:
        package = f".[{extras}]" if extras else "."
        session.install("-e", package, f"tensorflow-cpu=={tensorflow}.*", *EXTRA_PINS.get(tensorflow, []))
    session.run("python", "-c", "import tensorflow as tf, numpy as np; print('tensorflow', tf.__version__, "
                "'numpy', np.__version__)", env=_ENV, silent=False)


def _requirements(extras: str) -> list[str]:
    """setup.cfg's install_requires (TensorFlow left out) plus the extra's requirements."""
    config = configparser.RawConfigParser()
    config.read("setup.cfg")
    lines = config.get("options", "install_requires").split()
    if extras:
        lines += config.get("options.extras_require", extras).split()
    return [line for line in lines if not line.startswith("tensorflow")]


def _tests(session: nox.Session, tensorflow: str) -> None:
    _install(session, tensorflow)
    session.run("pytest", *session.posargs, env=_ENV)


def _check(session: nox.Session, tensorflow: str, shard: tuple[int, int] | None = None) -> None:
    """A release that cannot be installed is a skip record in its report file, so `matrix` lists it with why
    (written by the first shard only: one record per release)."""
    os.makedirs("reports", exist_ok=True)
    output = f"reports/check-tf{tensorflow}{'' if shard is None else '-shard{}of{}'.format(*shard)}.json"
    try:
        _install(session, tensorflow, extras="")
    except CommandFailed as exc:
        reason = f"TensorFlow {tensorflow} could not be installed for Python {PYTHON}: {exc.reason or exc}"
        if shard is None or shard[0] == 1:
            with open(output, "w", encoding="utf-8") as file:
                json.dump({"tool": "compat-check", "release": tensorflow, "release_skipped": reason}, file)
        session.skip(reason)
    sharding = [] if shard is None else ["--shard={}/{}".format(*shard)]
    session.run("compat-check", "--format=json", f"--output={output}", *sharding, *session.posargs,
                success_codes=[0, 1], env=_ENV)


def _per_release(name: str, body: Callable[[nox.Session, str], None], doc: str) -> None:
    """Sessions `{name}-2.12` ... `{name}-2.21`, one venv each, `{name}`, which runs them all, and
    `{name}-nightly` (tf-nightly; not in `{name}` nor in the defaults).

    Named sessions rather than `@nox.parametrize` (whose names are `tests(2.21)`, to be quoted in a shell).
    """
    for version in [*TF_VERSIONS, NIGHTLY]:
        def session_func(session: nox.Session, version: str = version) -> None:
            body(session, version)

        session_func.__doc__ = doc.format(version=version)
        tags = [name] if version != NIGHTLY else [NIGHTLY]
        nox.session(name=f"{name}-{version}", python=PYTHON, venv_backend="venv", tags=tags)(session_func)

    def all_releases(session: nox.Session) -> None:
        session.log(f"ran {name} on TensorFlow {', '.join(TF_VERSIONS)}")

    all_releases.__doc__ = f"{name}-2.12 ... {name}-{LATEST}, one after the other (posargs go to each)."
    nox.session(name=name, venv_backend="none", requires=[f"{name}-{v}" for v in TF_VERSIONS])(all_releases)


_per_release("tests", _tests, "pytest on TensorFlow {version}; posargs go to pytest (e.g. `-- -k myspec -x`).")
_per_release("check", _check, "compat-check on TensorFlow {version} -> reports/check-tf{version}.json; posargs go "
             "to compat-check. Exit 1 (a native variant disagrees) is a finding, not a failure.")


def shard_sessions(count: int = CHECK_SHARDS) -> list[str]:
    """Every release's shard sessions, release by release: CI's job matrix (tools/gen_ci_template.py)."""
    return [f"check-{version}-shard{index}of{count}" for version in TF_VERSIONS for index in range(1, count + 1)]


def _shard_sessions() -> None:
    """`check-<release>-shard<K>of<N>`: compat-check --shard=K/N on one release (posargs go to compat-check)."""
    for version in TF_VERSIONS:
        for index in range(1, CHECK_SHARDS + 1):
            def session_func(session: nox.Session, version: str = version, index: int = index) -> None:
                _check(session, version, (index, CHECK_SHARDS))

            session_func.__doc__ = (f"compat-check --shard={index}/{CHECK_SHARDS} on TensorFlow {version} -> "
                                    f"reports/check-tf{version}-shard{index}of{CHECK_SHARDS}.json")
            nox.session(name=f"check-{version}-shard{index}of{CHECK_SHARDS}", python=PYTHON, venv_backend="venv",
                        tags=["check-shards"])(session_func)


_shard_sessions()


@nox.session(venv_backend="none")
def merge(session: nox.Session) -> None:
    """Merge every reports/check-tf*.json already there (shards joined per release) into reports/matrix.*: CI's
    merge job, once every check job's report is downloaded into reports/."""
    reports = sorted(glob.glob("reports/check-tf*.json"))
    if not reports:
        session.error("no reports/check-tf*.json: run the check sessions (or download their reports) first")
    session.run(sys.executable, "-m", "compat.releases", *reports, "--output_dir=reports", external=True,
                env={"PYTHONPATH": os.getcwd()})


def _merge(session: nox.Session, releases: list[str]) -> None:
    """Merge the releases' reports with nox's own interpreter (compat.releases is standard library only)."""
    reports = [f"reports/check-tf{version}.json" for version in releases]
    session.run(sys.executable, "-m", "compat.releases", *reports, "--output_dir=reports", external=True,
                env={"PYTHONPATH": os.getcwd()})


@nox.session(venv_backend="none", requires=[f"check-{v}" for v in TF_VERSIONS])
def matrix(session: nox.Session) -> None:
    """compat-check on every release, merged: reports/matrix.json, matrix.md, matrix.html (changes highlighted).

    posargs go to every compat-check, e.g. `nox -s matrix -- --specs=path/to/my_specs.py:MY_SPEC`.
    """
    _merge(session, TF_VERSIONS)


@nox.session(name="matrix-nightly", venv_backend="none", requires=[f"check-{v}" for v in [*TF_VERSIONS, NIGHTLY]])
def matrix_nightly(session: nox.Session) -> None:
    """`matrix` plus tf-nightly as the last column."""
    _merge(session, [*TF_VERSIONS, NIGHTLY])


@nox.session(python=PYTHON, venv_backend="venv")
def lint(session: nox.Session) -> None:
    """ruff check and mypy on the package (mypy needs TensorFlow's and numpy's stubs: the package is installed)."""
    session.install("ruff")
    session.run("ruff", "check", *(session.posargs or ["."]))
    _install(session, LATEST, extras="test")
    session.run("mypy", "compat")


@nox.session(python=PYTHON, venv_backend="venv")
def audit(session: nox.Session) -> None:
    """compat-audit over the installed TensorFlow's own source tree. Informative: findings do not fail it.

    posargs go to compat-audit before the path, e.g. `nox -s audit -- --format=markdown --output=audit.md`.
    """
    _install(session, LATEST, extras="")
    tree = session.run("python", "-c", "import importlib.util, os; spec = importlib.util.find_spec('tensorflow'); "
                       "print(os.path.dirname(spec.origin))", silent=True, env=_ENV)
    session.run("compat-audit", *session.posargs, (tree or "").strip(), success_codes=[0, 1], env=_ENV)
