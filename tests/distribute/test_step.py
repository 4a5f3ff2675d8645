"""Which cases split into one shard per replica."""

import numpy as np

from compat.contexts.base import Case
from compat.distribute.step import batch_problem
from compat.downstream import SUM, Downstream


def _case(*inputs, downstream=None):
    shardable = Downstream("sum", SUM.loss, shard=lambda rows: SUM)
    return Case(build=lambda: None, inputs=tuple(inputs), downstream=downstream or shardable)


def test_inputs_need_one_shared_batch_dimension_of_at_least_two_rows():
    assert batch_problem(_case(np.zeros((4, 3)), np.zeros((4,)))) is None
    assert "same leading dimension of at least 2" in batch_problem(_case(np.zeros(())))
    assert "shapes [[1, 3]]" in batch_problem(_case(np.zeros((1, 3))))
    assert batch_problem(_case(np.zeros((4, 3)), np.zeros((3, 3)))) is not None


def test_a_downstream_without_a_shard_is_refused_by_name():
    assert "`sum` cannot be split" in batch_problem(_case(np.zeros((4, 3)), downstream=SUM))
