"""Import user code in a child process: the original as TF1 code expects (`tensorflow` is `compat.v1`), or as is."""

from __future__ import annotations

import importlib.util
import os
import re
import sys
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


def import_path(path: str, side: str, extra_paths: tuple[str, ...] = ()) -> ModuleType:
    """Import the module at `path` under a unique name, with its directory (then `extra_paths`) importable.

    Exceptions, SystemExit included, propagate to the caller, which reports them.
    """
    stem = re.sub(r"\W", "_", os.path.splitext(os.path.basename(path))[0])
    name = f"_gradcompat_verify_{side}_{stem}"
    for directory in reversed((os.path.dirname(os.path.abspath(path)), *extra_paths)):
        if directory not in sys.path:
            sys.path.insert(0, directory)
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}: not a Python source file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
