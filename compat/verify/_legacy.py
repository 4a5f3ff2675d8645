"""Import user code in a child process: the original as TF1 code expects (`tensorflow` is `compat.v1`), or as is."""

from __future__ import annotations

import importlib
import importlib.util
import os
import re
import sys
import traceback
from types import ModuleType


def install_legacy_tensorflow() -> ModuleType:
    """Make `import tensorflow` give `tensorflow.compat.v1` with v2 behaviour disabled, as TF1 code expects.

    The real package stays importable underneath, so `import tensorflow.compat.v1 as tf` and
    `from tensorflow.python.framework import ops, function` keep working. Call it once, in a child process,
    after gradcompat's own modules are imported (they keep the real TF2 module).
    """
    import tensorflow

    v1 = tensorflow.compat.v1
    v1.disable_v2_behavior()
    sys.modules["tensorflow"] = v1
    return v1


def package_of(path: str) -> tuple[str, str] | None:
    """(directory to put on sys.path, dotted package name) when `path` lies in a package (its directory has
    an `__init__.py`), else None. Relative imports in such a module only work when it is imported as part of it."""
    directory = os.path.dirname(os.path.abspath(path))
    parts: list[str] = []
    while os.path.isfile(os.path.join(directory, "__init__.py")) and os.path.basename(directory).isidentifier():
        parts.insert(0, os.path.basename(directory))
        directory = os.path.dirname(directory)
    return (directory, ".".join(parts)) if parts else None


def import_path(path: str, side: str, extra_paths: tuple[str, ...] = (), package: tuple[str, str] | None = None
                ) -> ModuleType:
    """Import the module at `path`, with its directory (then `extra_paths`) importable.

    A module in a package is imported as part of it, so its relative imports work: as itself when `path` is in
    the package, else (a rewrite in a temporary file) as a member of `package` (root, dotted name) under its
    own file name. Exceptions, SystemExit included, propagate to the caller, which reports them.
    """
    stem = os.path.splitext(os.path.basename(path))[0]
    own = package_of(path)
    package = own or package
    directories = (os.path.dirname(os.path.abspath(path)), *extra_paths, *((package[0],) if package else ()))
    for directory in reversed(directories):
        if directory not in sys.path:
            sys.path.insert(0, directory)
    if package is None or not stem.isidentifier():
        name = f"_gradcompat_verify_{side}_" + re.sub(r"\W", "_", stem)
    else:
        importlib.import_module(package[1])
        name = f"{package[1]}.{stem}"
        if own is not None:
            return importlib.import_module(name)
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}: not a Python source file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


_MISSING_TF_ATTRIBUTE = re.compile(r"module '(tensorflow[\w.]*)' has no attribute '(\w+)'")


def missing_tensorflow_symbol(exc: BaseException, path: str) -> str | None:
    """For an AttributeError on a TensorFlow module raised by code in `path` (`tf.contrib...`, an API TF2 removed
    even from tf.compat.v1): where, what and what to do; None for any other exception."""
    match = _MISSING_TF_ATTRIBUTE.search(str(exc)) if isinstance(exc, AttributeError) else None
    if match is None:
        return None
    import tensorflow

    target = os.path.abspath(path)
    frames = [frame for frame in traceback.extract_tb(exc.__traceback__)
              if os.path.abspath(frame.filename) == target]
    where = f"{path}:{frames[-1].lineno}: `{(frames[-1].line or '').strip()}` " if frames else f"{path}: "
    module, name = match.groups()
    removed = ("tf.contrib was removed in TensorFlow 2.0, and tf.compat.v1 does not have it either"
               if name == "contrib" else f"`{module}` has no `{name}` in TensorFlow {tensorflow.__version__}")
    return (f"{where}needs `tf.{name}`: {removed}. Replace it with its TensorFlow 2 equivalent in the original "
            f"(and the rewrite) before verifying, or verify with a TensorFlow release that has it")
