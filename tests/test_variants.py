"""The variant listing: every mechanism × context, native ones as the issue defines them."""

import pytest

import compat
from compat import variants


def test_every_mechanism_context_pair_is_a_variant():
    assert len(compat.VARIANTS) == len(compat.MECHANISMS) * len(compat.CONTEXTS) == 60
    assert compat.variant_names() == compat.VARIANTS


def test_native_variants_are_legacy_in_v1_session_and_custom_gradient_everywhere():
    expected = {"defun_grad_func@v1_session", "defun_python_grad_func@v1_session", "override_map@v1_session"}
    expected |= {f"custom_gradient@{name}" for name, context in compat.CONTEXTS.items() if context.native}
    assert set(compat.NATIVE_VARIANTS) == expected
    assert compat.is_native("custom_gradient@function_tape")
    assert not compat.is_native("override_map@eager_tape")


def test_a_context_that_changes_the_numbers_by_design_has_no_native_variant():
    assert not compat.CONTEXTS["mixed_precision"].native
    assert not compat.CONTEXTS["keras_fit"].native  # a clip sees its upstream divided by the batch size
    assert not compat.is_native("custom_gradient@mixed_precision")
    assert not compat.CONTEXTS["saved_model_stripped"].native  # the option drops custom gradients
    assert compat.is_native("custom_gradient@saved_model")
    assert compat.is_native("custom_gradient@outer_tape")


def test_select_globs_and_order():
    assert variants.select("*@eager_tape") == tuple(v for v in compat.VARIANTS if v.endswith("@eager_tape"))
    assert variants.select(["custom_gradient@v1_tape", "override_map@v1_session"]) == (
        "override_map@v1_session", "custom_gradient@v1_tape")
    assert variants.select(None) == compat.VARIANTS


@pytest.mark.parametrize("bad", ["nope", "custom_gradient", "custom_gradient@nowhere", "x@*"])
def test_bad_variant_names_list_the_valid_ones(bad):
    with pytest.raises(ValueError, match="MECHANISM@CONTEXT"):
        variants.select([bad])
    mechanism, context = compat.parse_variant("override_map@v1_tape")
    assert (mechanism.name, context.name) == ("override_map", "v1_tape")
