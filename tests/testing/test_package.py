"""compat.testing's public names: each resolves lazily, and unknown ones list them."""

import pytest

import compat.testing


def test_every_public_name_resolves():
    for name in compat.testing.__all__:
        assert getattr(compat.testing, name) is not None, name
    assert sorted(dir(compat.testing)) == sorted(compat.testing.__all__)
    assert compat.assert_native_variants_agree is compat.testing.assert_native_variants_agree


def test_unknown_names_list_the_public_ones():
    with pytest.raises(AttributeError, match=r"no attribute 'assert_same'; public names: .*'assert_same_upstream'"):
        compat.testing.assert_same  # noqa: B018
