"""compat.registry: names and metadata import without TensorFlow, agree with the implementations, and a
misspelt name is answered with the closest valid one."""

import importlib
import subprocess
import sys

import pytest

import compat
from compat import registry


def _fresh(code: str) -> str:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()


@pytest.mark.parametrize("module", ["compat.registry", "compat.variants", "compat.apps._names", "compat.reports",
                                    "compat.reports.table", "compat.reports.markdown", "compat.reports.html",
                                    "compat.verify", "compat.rewrite", "compat.sharding", "compat.releases",
                                    "compat.reports.merged", "compat.reports.merged_tools", "compat.child"])
def test_names_and_rendering_import_without_tensorflow(module):
    assert _fresh(f"import sys, {module}; print('tensorflow' in sys.modules)") == "False"


def test_variant_names_and_nativeness_need_no_tensorflow():
    code = ("import sys, compat.variants as v; print(len(v.ALL_VARIANTS), v.is_native('custom_gradient@eager_tape'),"
            " v.select('*@v1_session')[0], 'tensorflow' in sys.modules)")
    assert _fresh(code).split() == [str(len(registry.ALL_VARIANTS)), "True", "defun_grad_func@v1_session", "False"]


def _load(implementation: str) -> type:
    module, _, name = implementation.partition(":")
    return getattr(importlib.import_module(module), name)


def test_every_registered_context_is_implemented_and_every_implementation_registered():
    from compat.contexts import ALL_CONTEXTS, CONTEXTS

    assert tuple(ALL_CONTEXTS) == registry.ALL_CONTEXT_NAMES
    assert tuple(CONTEXTS) == registry.CONTEXT_NAMES
    for name, context in ALL_CONTEXTS.items():
        info = registry.CONTEXT_INFO[name]
        assert type(context) is _load(info.implementation), name
        assert (info.native, info.opt_in, info.uses_tape) == (context.native, context.opt_in, context.uses_tape)
        from compat.distribute.mirrored import DistributedContext

        assert info.distributed == isinstance(context, DistributedContext), name
        assert not info.needs_logical_cpus or info.distributed, name


def test_every_registered_mechanism_is_implemented_and_every_implementation_registered():
    from compat.mechanisms import MECHANISMS

    assert tuple(MECHANISMS) == registry.MECHANISM_NAMES
    for name, mechanism in MECHANISMS.items():
        info = registry.MECHANISM_INFO[name]
        assert type(mechanism) is _load(info.implementation), name
        assert info.native_contexts == mechanism.native_contexts, name


def test_scenario_dtype_and_variant_names_match_their_implementations():
    from compat.contexts import ALL_CONTEXTS, CONTEXTS
    from compat.dtypes import DTYPES
    from compat.mechanisms import MECHANISMS
    from compat.scenarios import SCENARIOS

    assert tuple(SCENARIOS) == registry.SCENARIO_NAMES
    assert tuple(DTYPES) == registry.DTYPE_NAMES
    assert registry.NATIVE_VARIANTS == tuple(
        f"{m}@{c}" for m, mechanism in MECHANISMS.items() for c, context in CONTEXTS.items()
        if context.native and mechanism.is_native(c))
    assert registry.ALL_VARIANTS == tuple(f"{m}@{c}" for m in MECHANISMS for c in ALL_CONTEXTS)


def test_catalogue_names_import_without_tensorflow():
    assert _fresh("import sys, compat.catalogue as c; print(len(c.ALL_SPECS) > 0, 'tensorflow' in sys.modules)") \
        == "True False"


@pytest.mark.parametrize("call, argument, suggestion", [
    (lambda: registry.context_info("eager_tap"), "context", "eager_tape"),
    (lambda: registry.mechanism_info("custom_gradiant"), "mechanism", "custom_gradient"),
    (lambda: registry.check_names(["flaot32"], registry.DTYPE_NAMES, "dtype", "dtypes"), "dtypes", "float32"),
    (lambda: compat.verify.verify_files("x.py", "y.py", contexts=["eager_tap"]), "contexts", "eager_tape"),
])
def test_unknown_names_get_the_closest_valid_one_and_the_argument(call, argument, suggestion):
    with pytest.raises(compat.Error, match=rf"^{argument}: unknown .*did you mean `{suggestion}`.*choose from"):
        call()


def test_verify_scenario_names_are_checked_without_tensorflow():
    code = ("import sys\nfrom compat.verify._runner import check_scenarios\ntry:\n    check_scenarios(['summ'])\n"
            "except ValueError as e:\n    print(str(e).split(';')[0], 'tensorflow' in sys.modules)")
    assert _fresh(code) == "scenarios: unknown scenario(s) ['summ'] (did you mean `sum`?) False"


def test_needs_logical_cpus_follows_the_registry():
    assert registry.needs_logical_cpus(["custom_gradient@eager_tape", "*@mirrored_v1"])
    assert not registry.needs_logical_cpus(["*@multi_worker", "*@*", "custom_gradient"])
