"""Downstream values: validation and what compat.run accepts as `loss`."""

import pytest

from compat.downstream import SUM, Downstream, as_downstream


def test_as_downstream_accepts_none_callables_and_downstreams():
    assert as_downstream(None) is SUM

    def weighted(y):
        return y

    assert as_downstream(weighted).name == "weighted"
    assert as_downstream(weighted).loss is weighted
    assert as_downstream(SUM) is SUM
    with pytest.raises(TypeError, match="loss must be None, a callable"):
        as_downstream(3)  # type: ignore[arg-type]


def test_invalid_downstreams_name_themselves():
    with pytest.raises(ValueError, match="downstream `third`: order must be 1 or 2"):
        Downstream("third", SUM.loss, order=3)
    with pytest.raises(ValueError, match="downstream `x`: loss must be callable"):
        Downstream("x", 5)  # type: ignore[arg-type]
