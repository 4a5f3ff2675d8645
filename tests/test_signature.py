"""Output signatures are read by building the forward once on placeholders."""

import numpy as np
import pytest
import tensorflow as tf

import compat
from compat.probe import UserCodeError
from compat.signature import output_signature


def test_signature_of_a_multi_output_spec_with_a_variable():
    spec = compat.GradientSpec("sig", lambda x, w: (x * w, tf.cast(x, tf.int32)), lambda i, o, u: [u[0], u[0]],
                               [np.ones((2, 3), np.float64)], variables=[np.ones(3, np.float64)])
    signature = output_signature(spec)
    assert signature.dtypes == (tf.float64, tf.int32)
    assert signature.shapes == ((2, 3), (2, 3))
    assert signature.num_outputs == 2


def test_failing_forward_names_the_spec():
    spec = compat.GradientSpec("sig_broken", lambda x: 1 / 0, lambda i, o, u: [u[0]], [np.ones(2, np.float32)])
    with pytest.raises(UserCodeError, match="spec `sig_broken`.*forward raised ZeroDivisionError"):
        output_signature(spec)
