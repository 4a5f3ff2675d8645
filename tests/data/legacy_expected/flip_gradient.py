"""Gradient reversal layer for domain-adversarial training (after pumpikano/tf-dann)."""

import tensorflow as tf

GRADCOMPAT_ENTRIES = {"entry": [("float32", [2, 3])]}


class FlipGradientBuilder(object):
    def __init__(self):
        self.num_calls = 0

    def __call__(self, x, l=1.0):
        @tf.custom_gradient
        def _identity_with_flip_gradients(x):
            y = tf.identity(x)

            def _flip_gradients(grad):
                # Reverse (and scale) the gradient on the way back.
                return [tf.negative(grad) * l]

            return y, _flip_gradients

        y = _identity_with_flip_gradients(x)

        self.num_calls += 1
        return y


flip_gradient = FlipGradientBuilder()


def entry(x):
    features = tf.nn.relu(x)
    return flip_gradient(features, l=0.3) * x
