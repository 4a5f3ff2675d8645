"""Custom gradients under tf.distribute: logical devices, shards, the per-replica step and its comparison."""

from compat.distribute.devices import LOGICAL_CPUS, use_logical_cpus

__all__ = ["LOGICAL_CPUS", "use_logical_cpus"]
