"""compat.override_gradients: a TF1 override map around a whole network, honoured in every TF2 context, or an error.

The reference is always the legacy code itself: the same network built under `gradient_override_map` in a
tf.compat.v1 Graph and differentiated by a Session.
"""

import numpy as np
import pytest
import tensorflow as tf

import compat
from compat.gradient_override import GradientOverrideError

X = np.array([[1.0, -2.0, 3.0], [0.5, 1.5, -1.0]], np.float32)
W = np.array([[1.0, -1.0, 0.5, 2.0], [0.5, 1.0, -1.0, 1.0], [-1.0, 0.5, 1.0, -0.5]], np.float32)
V = np.array([[1.0], [-2.0], [1.5], [-1.0]], np.float32)  # negative weights: guided and plain gradients differ


def guided_relu_grad(op, grad):
    """Guided backprop, as saliency libraries register it: only positive gradients through active units."""
    return grad * tf.cast(grad > 0.0, grad.dtype) * tf.cast(op.outputs[0] > 0.0, grad.dtype)


tf.RegisterGradient("TestGuidedRelu")(guided_relu_grad)


def network(x):
    """A helper that builds a network: code a rewriter cannot see into."""
    hidden = tf.nn.relu(tf.matmul(x, tf.constant(W)))
    return tf.reduce_sum(tf.matmul(tf.nn.relu(hidden - 1.0), tf.constant(V)))


def legacy_gradient(override: bool) -> np.ndarray:
    """TF1: the network built under the map (or without it) in a v1 graph, its gradient run by a Session."""
    with tf.Graph().as_default() as graph:
        x = tf.constant(X)
        if override:
            with graph.gradient_override_map({"Relu": "TestGuidedRelu"}):
                y = network(x)
        else:
            y = network(x)
        gradient = tf.compat.v1.gradients(y, x)[0]
        with tf.compat.v1.Session() as session:
            return session.run(gradient)


def eager_tape(fn):
    x = tf.constant(X)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = fn(x)
    return tape.gradient(y, x).numpy()


def function_tape(fn, jit_compile=False):
    @tf.function(jit_compile=jit_compile)
    def gradient(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = fn(x)
        return tape.gradient(y, x)

    return gradient(tf.constant(X)).numpy()


def function_gradients(fn):
    return tf.function(lambda x: tf.gradients(fn(x), x)[0])(tf.constant(X)).numpy()


def v1_session(fn):
    with tf.Graph().as_default():
        x = tf.constant(X)
        gradient = tf.compat.v1.gradients(fn(x), x)[0]
        with tf.compat.v1.Session() as session:
            return session.run(gradient)


CONTEXTS = {
    "eager_tape": eager_tape,
    "function_tape": function_tape,
    "xla_tape": lambda fn: function_tape(fn, jit_compile=True),
    "function_gradients": function_gradients,
    "v1_session": v1_session,
}


def test_the_legacy_override_changes_the_gradient():
    """Otherwise the context tests below would prove nothing."""
    assert not np.allclose(legacy_gradient(True), legacy_gradient(False))


@pytest.mark.parametrize("context", sorted(CONTEXTS))
@pytest.mark.parametrize("gradient", ["registered name", "function"])
def test_every_context_gets_the_legacy_gradient(context, gradient):
    value = "TestGuidedRelu" if gradient == "registered name" else guided_relu_grad
    guided = compat.override_gradients(network, {"Relu": value})
    np.testing.assert_allclose(CONTEXTS[context](guided), legacy_gradient(True), rtol=1e-6)


@pytest.mark.parametrize("options", [{"jit_compile": True}, {"reduce_retracing": True}])
def test_the_tf_function_options_keep_the_override(options):
    guided = compat.override_gradients(network, {"Relu": guided_relu_grad}, **options)
    np.testing.assert_allclose(eager_tape(guided), legacy_gradient(True), rtol=1e-6)


def test_plain_tf2_ignores_a_map_entered_eagerly():
    """Why the helper exists: the legacy map entered eagerly gives the plain gradient under a tape."""

    def eager_map(x):
        with tf.compat.v1.get_default_graph().gradient_override_map({"Relu": "TestGuidedRelu"}):
            return network(x)

    np.testing.assert_allclose(eager_tape(eager_map), legacy_gradient(False), rtol=1e-6)


def test_a_keras_models_fit_applies_the_override():
    """model.fit of a Keras model calling the wrapped network: the step SGD takes is the legacy gradient's."""
    import keras

    constant = keras.initializers.Constant
    inner = keras.Sequential([keras.Input((3,)),
                              keras.layers.Dense(4, activation="relu", kernel_initializer=constant(W)),
                              keras.layers.Dense(1, kernel_initializer=constant(V))])

    class Guided(keras.Model):
        def __init__(self):
            super().__init__()
            self.inner = inner
            self.guided = compat.override_gradients(inner, {"Relu": guided_relu_grad})

        def call(self, x):
            return self.guided(x)

    model = Guided()
    targets = np.array([[1.0], [-1.0]], np.float32)
    model(X)
    weights = [w.numpy() for w in inner.trainable_weights]

    def legacy_weight_gradients():
        with tf.Graph().as_default() as graph:
            x = tf.constant(X)
            ws = [tf.constant(w) for w in weights]
            with graph.gradient_override_map({"Relu": "TestGuidedRelu"}):
                hidden = tf.nn.relu(tf.matmul(x, ws[0]) + ws[1])
            loss = tf.reduce_mean(tf.square(targets - (tf.matmul(hidden, ws[2]) + ws[3])))
            with tf.compat.v1.Session() as session:
                return session.run(tf.compat.v1.gradients(loss, ws))

    model.compile(optimizer=keras.optimizers.SGD(1.0), loss="mse")
    model.fit(X, targets, batch_size=2, epochs=1, verbose=0, shuffle=False)
    steps = [before - after.numpy() for before, after in zip(weights, inner.trainable_weights, strict=True)]
    expected = legacy_weight_gradients()
    for step, gradient in zip(steps, expected, strict=True):
        np.testing.assert_allclose(step, gradient, rtol=1e-5, atol=1e-6)
    assert not np.allclose(expected[0], _plain_first_kernel_gradient(weights, targets))


def _plain_first_kernel_gradient(weights, targets):
    x = tf.constant(X)
    ws = [tf.constant(w) for w in weights]
    with tf.GradientTape() as tape:
        tape.watch(ws)
        out = tf.matmul(tf.nn.relu(tf.matmul(x, ws[0]) + ws[1]), ws[2]) + ws[3]
        loss = tf.reduce_mean(tf.square(targets - out))
    return tape.gradient(loss, ws[0]).numpy()


def test_the_gradient_function_may_read_op_attributes_as_in_tf1():
    def scaled_by_dtype(op, grad):
        assert op.get_attr("T") == tf.float32 and op.type == "Relu"
        return 3.0 * grad

    guided = compat.override_gradients(lambda x: tf.reduce_sum(tf.nn.relu(x)), {"Relu": scaled_by_dtype})
    np.testing.assert_allclose(eager_tape(guided), np.full_like(X, 3.0))


@pytest.mark.parametrize("where, build", [
    ("tf.cond", lambda x: tf.cond(tf.reduce_sum(x) > 0, lambda: network(x), lambda: network(-x))),
    ("tf.while_loop", lambda x: tf.while_loop(lambda i, y: i < 1, lambda i, y: (i + 1, network(x)),
                                              [tf.constant(0), tf.constant(0.0)])[1]),
    ("nested tf.function", tf.function(network)),
])
def test_ops_the_map_cannot_reach_raise(where, build):
    guided = compat.override_gradients(build, {"Relu": guided_relu_grad})
    with pytest.raises(GradientOverrideError, match="graph of its own.*where the override map does not reach"):
        eager_tape(guided)


def test_a_tape_inside_the_function_raises():
    def inner_tape(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = network(x)
        return tf.reduce_sum(tape.gradient(y, x))

    with pytest.raises(GradientOverrideError, match="GradientTape inside the function"):
        compat.override_gradients(inner_tape, {"Relu": guided_relu_grad})(tf.constant(X))


def test_an_override_that_matches_no_op_raises_unless_allowed():
    with pytest.raises(GradientOverrideError, match="no op of type Relu was built"):
        compat.override_gradients(lambda x: x * 2.0, {"Relu": guided_relu_grad})(tf.constant(X))
    assert compat.override_gradients(lambda x: x * 2.0, {"Relu": guided_relu_grad}, require_match=False)(
        tf.constant(X)).shape == X.shape


@pytest.mark.parametrize("gradients, message", [
    ({"Rleu": guided_relu_grad}, r"'Rleu' is not an op type TensorFlow knows \(did you mean 'Relu'\?\)"),
    ({"Relu": "NoSuchGradient"}, r"'NoSuchGradient', is not registered: register it first"),
    ({"Relu": 3}, "must be a registered gradient name or a function"),
    ({}, "non-empty mapping"),
])
def test_bad_maps_are_refused_when_wrapped(gradients, message):
    with pytest.raises(ValueError, match=message):
        compat.override_gradients(network, gradients)


def test_a_gradient_function_is_registered_once_however_often_it_is_used():
    first = compat.override_gradients(network, {"Relu": guided_relu_grad})
    second = compat.override_gradients(network, {"Relu": guided_relu_grad})
    assert first.gradient_map == second.gradient_map
    assert first.__wrapped__ is network and "network" in repr(first)


def test_functions_run_eagerly_raise_instead_of_giving_plain_gradients():
    """tf.config.run_functions_eagerly(True) runs the function eagerly, where a tape ignores the map."""
    guided = compat.override_gradients(network, {"Relu": guided_relu_grad}, require_match=False)
    tf.config.run_functions_eagerly(True)
    try:
        with pytest.raises(GradientOverrideError, match=r"run_functions_eagerly\(True\)"):
            eager_tape(guided)
    finally:
        tf.config.run_functions_eagerly(False)


@tf.custom_gradient
def hand_written_guided_relu(x):
    """The TF2 way to write guided backprop by hand, the reference for the override below."""
    y = tf.nn.relu(x)

    def grad(dy):
        return dy * tf.cast(dy > 0.0, dy.dtype) * tf.cast(y > 0.0, dy.dtype)

    return y, grad


def test_guided_backprop_of_a_keras_model_matches_a_hand_written_custom_gradient():
    """Saliency libraries' pattern: Relu overridden by a registered guided gradient for a whole Keras model."""
    import keras

    def model(activation):
        keras.utils.set_random_seed(0)
        return keras.Sequential([keras.Input((6, 6, 1)), keras.layers.Conv2D(3, 3, activation=activation),
                                 keras.layers.Flatten(), keras.layers.Dense(5, activation=activation),
                                 keras.layers.Dense(3)])

    images = tf.constant(np.random.default_rng(0).normal(size=(2, 6, 6, 1)).astype(np.float32))

    def saliency(network):
        with tf.GradientTape() as tape:
            tape.watch(images)
            top = tf.reduce_max(network(images), axis=1)
        return tape.gradient(top, images).numpy()

    plain, reference = model("relu"), model(hand_written_guided_relu)
    reference.set_weights(plain.get_weights())
    guided = compat.override_gradients(plain, {"Relu": "TestGuidedRelu"})
    np.testing.assert_allclose(saliency(guided), saliency(reference), rtol=1e-5, atol=1e-7)
    assert not np.allclose(saliency(plain), saliency(reference))
