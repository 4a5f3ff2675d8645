"""Several ops overridden by one map, and maps nested inside each other."""

import tensorflow as tf

GRADCOMPAT_ENTRIES = {
    "entry": [("float32", [3]), ("float32", [3])],
    "nested_entry": [("float32", [4])],
}


def hard_features(a, b):
    graph = tf.get_default_graph()
    # One map for every rounding-like op of the block.
    with graph.gradient_override_map({"Sign": "Identity",
                                      "Round": "Identity",
                                      "Floor": "Identity"}):
        s = tf.sign(a)
        r = tf.round(b * 2.0)
        f = tf.floor(a + b)
    return s + r * f


def nested(x):
    graph = tf.get_default_graph()
    with graph.gradient_override_map({"Round": "Identity"}):
        coarse = tf.round(x)
        with graph.gradient_override_map({"Sign": "Identity"}):
            fine = tf.sign(x - coarse)  # residual sign
    return coarse + 0.5 * fine


def entry(a, b):
    return hard_features(a, b)


def nested_entry(x):
    return nested(x * 3.0)
