"""gradcompat: run one custom gradient through every TensorFlow mechanism and context, and compare.

Importing `compat` is cheap: TensorFlow is imported only when a name that needs it is first used, so the
static audit (`compat.audit`, `compat-audit`) never imports TensorFlow.
"""

from __future__ import annotations

import importlib
from typing import Any

from compat._version import __version__

# Public name -> module that defines it. Resolved lazily on first attribute access (PEP 562).
_EXPORTS: dict[str, str] = {
    "GradientSpec": "compat.spec",
    "SpecError": "compat.spec",
    "RaggedArray": "compat.composite",
    "SparseArray": "compat.composite",
    "Upstream": "compat.results",
    "VariantResult": "compat.results",
    "STATUSES": "compat.results",
    "run": "compat.runner",
    "VARIANTS": "compat.variants",
    "variant_names": "compat.variants",
    "parse_variant": "compat.variants",
    "MECHANISMS": "compat.mechanisms",
    "CONTEXTS": "compat.contexts",
    "NATIVE_VARIANTS": "compat.variants",
    "is_native": "compat.variants",
    "Downstream": "compat.downstream",
    "SCENARIOS": "compat.scenarios",
    "Scenario": "compat.scenarios",
    "DTYPES": "compat.dtypes",
    "TOLERANCES": "compat.dtypes",
    "CATALOGUE": "compat.catalogue",
    "check": "compat.matrix",
    "CheckReport": "compat.matrix",
    "Cell": "compat.matrix",
    "Difference": "compat.checker",
    "compare": "compat.checker",
    "render": "compat.reports",
    "load_specs": "compat.loading",
    "assert_native_variants_agree": "compat.testing._native",
    "verify_rewrite": "compat.verify",
    "verify_files": "compat.verify",
    "VerifyReport": "compat.verify",
    "rewrite_source": "compat.rewrite",
    "rewrite_file": "compat.rewrite",
    "rewrite_paths": "compat.rewrite",
    "override_gradients": "compat.gradient_override",
    "gradient_override_map": "compat.override_context",
    "GradientOverride": "compat.gradient_override",
    "GradientOverrideError": "compat.gradient_override",
}

_SUBMODULES = ("testing", "audit", "reports", "rewrite", "verify")
"""Public submodules reachable as attributes after `import compat` (`compat.testing.assert_...`), imported
on first use like the names above."""

__all__ = ["__version__", *_EXPORTS, *_SUBMODULES]


def __getattr__(name: str) -> Any:
    if name in _SUBMODULES:
        module = importlib.import_module(f"compat.{name}")
        globals()[name] = module
        return module
    module_name = _EXPORTS.get(name)
    if module_name is None:
        raise AttributeError(f"module 'compat' has no attribute {name!r}; public names: {sorted(__all__)}")
    value = getattr(importlib.import_module(module_name), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
