"""compat.testing: run your own custom-gradient tests in every variant, with pytest or absl.

Importing it is cheap: TensorFlow, pytest and absl are imported only when a name that needs them is used.
"""

from __future__ import annotations

import importlib
from typing import Any

# Public name -> module that defines it, resolved on first attribute access (PEP 562).
_EXPORTS: dict[str, str] = {
    "assert_same_upstream": "compat.testing._assertions",
    "assert_same_gradients": "compat.testing._assertions",
    "run_variant": "compat.testing._assertions",
    "assert_native_variants_agree": "compat.testing._native",
    "assert_gradient_matches_forward": "compat.testing._forward",
    "resolve_variants": "compat.testing._selection",
    "parametrize_variants": "compat.testing.plugin",
    "TestCase": "compat.testing.absl",
    "named_variants": "compat.testing.absl",
}

__all__ = list(_EXPORTS)


def __getattr__(name: str) -> Any:
    module_name = _EXPORTS.get(name)
    if module_name is None:
        raise AttributeError(f"module 'compat.testing' has no attribute {name!r}; public names: {sorted(__all__)}")
    value = getattr(importlib.import_module(module_name), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
