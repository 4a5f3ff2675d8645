"""The logical CPUs MirroredStrategy runs its replicas on, on a machine with one physical CPU device."""

from __future__ import annotations

LOGICAL_CPUS = 2
"""Replicas of the mirrored contexts: one per logical CPU."""


def use_logical_cpus(count: int = LOGICAL_CPUS) -> str | None:
    """Split the first physical CPU into `count` logical CPUs; None when they exist, else why they cannot.

    TensorFlow fixes its devices when it first runs an op, so this must run before anything else uses
    TensorFlow (compat-check and the test suite call it at start-up). Afterwards it only reports.
    """
    import tensorflow as tf

    cpu = tf.config.list_physical_devices("CPU")[0]
    configured = tf.config.get_logical_device_configuration(cpu)  # unlike list_logical_devices, no device init
    if configured is not None and len(configured) >= count:
        return None
    try:
        tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * count)
    except RuntimeError as exc:
        have = len(configured or ()) or 1
        return (f"{count} logical CPUs are needed, {have} exist, and TensorFlow already initialised its devices "
                f"({exc}): call compat.distribute.use_logical_cpus() before your code runs any TensorFlow op")
    return None
