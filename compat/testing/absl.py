"""`compat.testing.TestCase`: the testing assertions as methods of an absl `parameterized.TestCase`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from absl.testing import parameterized

from compat.comparison import DEFAULT_REFERENCE
from compat.testing._selection import Selection, resolve_variants


def named_variants(selection: Selection = "native") -> Callable[..., Any]:
    """absl's `named_parameters`, one per selected variant: `test_ste` becomes `test_ste_custom_gradient@eager_tape`.

        class SteTest(compat.testing.TestCase):
            @compat.testing.named_variants("native")
            def test_ste(self, variant):
                self.assertEqual(compat.testing.run_variant(STE, variant).status, "ok")

    Run one with `python my_test.py SteTest.test_ste_custom_gradient@eager_tape`.
    """
    return parameterized.named_parameters(*[(f"_{name}", name) for name in resolve_variants(selection)])


class TestCase(parameterized.TestCase):
    """An absl `parameterized.TestCase` with gradcompat's assertions as methods."""

    named_variants = staticmethod(named_variants)

    def assertSameUpstream(self, spec: Any, scenarios: Any = None, *, variants: Selection = "native",  # noqa: N802
                           reference: str = DEFAULT_REFERENCE, **kwargs: Any) -> Any:
        """`compat.testing.assert_same_upstream`, failing this test with its message."""
        from compat.testing._assertions import assert_same_upstream

        try:
            return assert_same_upstream(spec, scenarios, variants=variants, reference=reference, **kwargs)
        except AssertionError as error:
            raise self.failureException(str(error)) from None

    def assertSameGradients(self, spec: Any, scenarios: Any = None, *, variants: Selection = "native",  # noqa: N802
                            reference: str = DEFAULT_REFERENCE, **kwargs: Any) -> Any:
        """`compat.testing.assert_same_gradients`, failing this test with its message."""
        from compat.testing._assertions import assert_same_gradients

        try:
            return assert_same_gradients(spec, scenarios, variants=variants, reference=reference, **kwargs)
        except AssertionError as error:
            raise self.failureException(str(error)) from None

    def assertNativeVariantsAgree(self, spec: Any, scenarios: Any = None, **kwargs: Any) -> Any:  # noqa: N802
        """`compat.testing.assert_native_variants_agree`, failing this test with its message."""
        from compat.testing._native import assert_native_variants_agree

        try:
            return assert_native_variants_agree(spec, scenarios, **kwargs)
        except AssertionError as error:
            raise self.failureException(str(error)) from None

    def assertGradientMatchesForward(self, spec: Any, scenarios: Any = None, **kwargs: Any) -> Any:  # noqa: N802
        """`compat.testing.assert_gradient_matches_forward`, failing this test with its message."""
        from compat.testing._forward import assert_gradient_matches_forward

        try:
            return assert_gradient_matches_forward(spec, scenarios, **kwargs)
        except AssertionError as error:
            raise self.failureException(str(error)) from None
