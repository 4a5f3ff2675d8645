"""gradcompat: run one custom gradient through every TensorFlow mechanism and context, and compare.

Importing `compat` is cheap: TensorFlow is imported only when a name that needs it is first used, so the
static audit (`compat.audit`, `compat-audit`) never imports TensorFlow.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from compat._version import __version__

if TYPE_CHECKING:
    # What type checkers see (the real names and types, as absl does); at run time `__getattr__` below imports
    # each lazily. tests/test_public_api.py checks this block and `_EXPORTS` name the same things.
    from compat import audit, distribute, registry, reports, rewrite, testing, verify  # noqa: F401
    from compat.catalogue import CATALOGUE  # noqa: F401
    from compat.checker import Cell, CheckReport, check  # noqa: F401
    from compat.comparison import Difference, Location, Part, compare  # noqa: F401
    from compat.composite import RaggedArray, SparseArray  # noqa: F401
    from compat.contexts import CONTEXTS  # noqa: F401
    from compat.downstream import Downstream  # noqa: F401
    from compat.dtypes import DTYPES, TOLERANCES  # noqa: F401
    from compat.errors import Error, UnknownNameError  # noqa: F401
    from compat.gradient_override import GradientOverride, GradientOverrideError, override_gradients  # noqa: F401
    from compat.loading import SpecLoadError, load_specs  # noqa: F401
    from compat.mechanisms import MECHANISMS  # noqa: F401
    from compat.override_context import gradient_override_map  # noqa: F401
    from compat.reports import render  # noqa: F401
    from compat.results import STATUSES, Upstream, VariantResult  # noqa: F401
    from compat.rewrite import rewrite_file, rewrite_paths, rewrite_source  # noqa: F401
    from compat.runner import run  # noqa: F401
    from compat.scenarios import SCENARIOS, Scenario  # noqa: F401
    from compat.spec import GradientSpec, SpecError  # noqa: F401
    from compat.testing._native import assert_native_variants_agree  # noqa: F401
    from compat.variants import NATIVE_VARIANTS, VARIANTS, is_native, parse_variant, variant_names  # noqa: F401
    from compat.verify import VerifyReport, verify_files, verify_rewrite  # noqa: F401

# Public name -> module that defines it. Resolved lazily on first attribute access (PEP 562).
_EXPORTS: dict[str, str] = {
    "GradientSpec": "compat.spec",
    "SpecError": "compat.spec",
    "SpecLoadError": "compat.loading",
    "Error": "compat.errors",
    "UnknownNameError": "compat.errors",
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
    "check": "compat.checker",
    "CheckReport": "compat.checker",
    "Cell": "compat.checker",
    "Difference": "compat.comparison",
    "Location": "compat.comparison",
    "Part": "compat.comparison",
    "compare": "compat.comparison",
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

_SUBMODULES = ("testing", "audit", "reports", "rewrite", "verify", "distribute", "registry")
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
