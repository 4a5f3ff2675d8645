"""A Python toolchain made from an interpreter already on this machine (the active venv's by default).

Bazel must not fetch Python or pip packages: gradcompat's tests need the interpreter that has
TensorFlow, numpy, absl-py and pytest installed. The interpreter is chosen, in order, from
$GRADCOMPAT_PYTHON, $VIRTUAL_ENV/bin/python3, then `python3` on PATH. The path is used as given, not
resolved, because a venv's `bin/python3` is a symlink whose target does not see the venv's packages.
"""

_REQUIRED_MODULES = ["tensorflow", "numpy", "absl", "pytest"]

_BUILD = """\
load("@bazel_tools//tools/python:toolchain.bzl", "py_runtime_pair")

# Interpreter: {python}
py_runtime(
    name = "py3_runtime",
    interpreter_path = "{python}",
    python_version = "PY3",
    stub_shebang = "#!{python}",
)

py_runtime_pair(
    name = "runtime_pair",
    py3_runtime = ":py3_runtime",
)

toolchain(
    name = "toolchain",
    toolchain = ":runtime_pair",
    toolchain_type = "@bazel_tools//tools/python:toolchain_type",
)
"""

# Finds which required modules the interpreter lacks without importing them (TensorFlow takes seconds).
_PROBE = "import importlib.util as u, sys; print(' '.join(m for m in sys.argv[1:] if u.find_spec(m) is None))"

def _choose_python(rctx):
    env = rctx.os.environ
    if env.get("GRADCOMPAT_PYTHON"):
        return env["GRADCOMPAT_PYTHON"], "$GRADCOMPAT_PYTHON"
    if env.get("VIRTUAL_ENV"):
        return env["VIRTUAL_ENV"] + "/bin/python3", "$VIRTUAL_ENV"
    found = rctx.which("python3")
    if found:
        return str(found), "python3 on PATH"
    fail("No Python found for Bazel: set GRADCOMPAT_PYTHON to an interpreter that has TensorFlow " +
         "installed, or activate its venv (tools/bazel_test.sh does this for you).")

def _local_python_impl(rctx):
    python, source = _choose_python(rctx)
    if not python.startswith("/"):
        fail("Python for Bazel must be an absolute path; got %r from %s." % (python, source))
    probe = rctx.execute([python, "-c", _PROBE] + _REQUIRED_MODULES)
    if probe.return_code != 0:
        fail("Python %s (from %s) does not run: %s" % (python, source, probe.stderr))
    missing = probe.stdout.strip()
    if missing:
        fail("Python %s (from %s) lacks %s; gradcompat's Bazel tests use its site-packages. " % (
            python,
            source,
            missing,
        ) + "Run `pip install -e '.[test]'` in that venv, or point GRADCOMPAT_PYTHON at one that has them.")
    rctx.file("WORKSPACE", 'workspace(name = "%s")\n' % rctx.name)
    rctx.file("BUILD", _BUILD.format(python = python))

local_python = repository_rule(
    implementation = _local_python_impl,
    environ = ["GRADCOMPAT_PYTHON", "VIRTUAL_ENV", "PATH"],
    local = True,
    doc = "Registers the interpreter of the active venv as the Python toolchain.",
)
