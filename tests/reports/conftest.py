"""Shared fixtures: one small real check report per session, and a hand-made report with awkward values."""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np
import pytest


@pytest.fixture(name="report", scope="session")
def report_fixture():
    """scaled_ste in float32 under three scenarios, every variant: a few seconds of real TensorFlow."""
    from compat.catalogue import CATALOGUE
    from compat.checker import check

    return check([CATALOGUE["scaled_ste"]()], scenarios=["sum", "gather", "second_order"], dtypes=["float32"])


@pytest.fixture(name="handmade_report", scope="session")
def handmade_report_fixture():
    """Two cells built by hand: a native cell that differs unexpectedly (NaN upstream, `<script>` message)
    and its reference."""
    from compat.checker import Cell, CheckReport
    from compat.comparison import Difference, Location
    from compat.results import Upstream, VariantResult

    reference = "defun_grad_func@v1_session"
    variant = "custom_gradient@eager_tape"
    ok = VariantResult("hand", reference, "defun_grad_func", "v1_session", "ok",
                       input_grads=(np.array([1.0, 2.0], np.float32),),
                       upstreams=((Upstream("dense", "float32", (2,), np.array([1.0, 1.0], np.float32)),),),
                       calls=1, traces=1)
    odd = VariantResult("hand", variant, "custom_gradient", "eager_tape", "ok",
                        input_grads=(np.array([np.inf, -np.inf], np.float32),),
                        upstreams=((Upstream("dense", "float32", (None,), np.array([np.nan, 1.0], np.float32)),),),
                        calls=1, traces=1, message="<script>alert(1)</script> `backticks` | pipe")
    difference = Difference("values", Location("upstream", 0), "values differ <b>here</b>", max_abs=float("nan"),
                            max_rel=float("inf"), index=(0,))
    cells = (
        Cell("hand", "sum", "float32", reference, True, "same", (), ok, reference, False),
        Cell("hand", "sum", "float32", variant, True, "differs", (difference,), odd, reference, True),
    )
    return CheckReport(cells, (), reference, ("hand",), ("sum",), ("float32",), (reference, variant))
