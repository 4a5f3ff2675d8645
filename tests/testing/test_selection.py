"""compat.testing._selection: "native", "cross", "all", globs, lists and comma-separated strings."""

import pytest

import compat
from compat.testing import resolve_variants


def test_keywords():
    assert resolve_variants("native") == compat.NATIVE_VARIANTS
    assert resolve_variants("all") == compat.VARIANTS
    assert set(resolve_variants("cross")) == set(compat.VARIANTS) - set(compat.NATIVE_VARIANTS)


def test_globs_lists_and_commas_give_the_union_in_registry_order():
    assert resolve_variants("*@v1_session") == tuple(v for v in compat.VARIANTS if v.endswith("@v1_session"))
    assert resolve_variants(["custom_gradient@eager_tape", "override_map@v1_session"]) == (
        "override_map@v1_session", "custom_gradient@eager_tape")
    assert resolve_variants("custom_gradient@*_tape, native") == resolve_variants(
        ["native", "custom_gradient@function_tape", "custom_gradient@eager_tape"])


def test_a_typo_lists_the_valid_names():
    with pytest.raises(ValueError, match=r"'custom_gradient@eagr_tape' matches no variant.*'native'.*"
                                         r"custom_gradient@eager_tape"):
        resolve_variants(["native", "custom_gradient@eagr_tape"])
    with pytest.raises(ValueError, match="empty variant selection"):
        resolve_variants([])
