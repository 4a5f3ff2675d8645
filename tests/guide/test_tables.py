"""Guide tables: values as a person reads them, and no line over 120 characters."""

import numpy as np
import pytest

from compat.results import Upstream
from tools.guide import tables


def test_upstreams_read_as_values_slices_or_none():
    assert tables.upstream_text(Upstream("dense", "float32", (3,), np.array([1.0, -2.0, 1 / 3]))) == "[1, -2, 0.333]"
    slices = Upstream("indexed_slices", "float32", (3,), np.array([1.0, 1.0]), np.array([0, 2]), (3,))
    assert tables.upstream_text(slices) == "[1, 1] at [0, 2]"
    assert tables.upstream_text(Upstream("none")) == "None"


def test_a_table_too_wide_for_a_page_is_refused_saying_what_to_do():
    with pytest.raises(ValueError, match="over 120.*shorten the headers or split the table"):
        tables.markdown_table(["x" * 70, "y" * 70], [["a", "b"]])
