"""DoReFa-Net quantizers for weights and activations (after tensorpack's dorefa.py)."""

import tensorflow as tf

GRADCOMPAT_ENTRIES = {"entry": [("float32", [6])]}


def get_dorefa(bitW, bitA):
    """Return the weight and activation quantizers for the given bit widths."""
    G = tf.get_default_graph()

    def quantize(x, k):
        n = float(2 ** k - 1)
        with G.gradient_override_map({"Round": "Identity"}):
            return tf.round(x * n) / n

    def fw(x):
        if bitW == 32:
            return x
        x = tf.tanh(x)
        x = x / tf.reduce_max(tf.abs(x)) * 0.5 + 0.5
        return 2 * quantize(x, bitW) - 1

    def fa(x):
        if bitA == 32:
            return x
        return quantize(x, bitA)

    return fw, fa


def entry(x):
    fw, fa = get_dorefa(2, 3)
    return fa(tf.sigmoid(fw(x)))
