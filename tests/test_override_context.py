"""compat/override_context.py: TF1's override map as a context manager, honoured by TF2 graph gradients and tapes
while a graph is built, refused eagerly, compared with a hand-written tf.custom_gradient on real TensorFlow."""

from __future__ import annotations

import contextlib

import numpy as np
import pytest

import compat
from compat.gradient_override import GradientOverrideError

tf = pytest.importorskip("tensorflow")

X = np.array([[1.0, -2.0, 0.5], [-0.5, 2.0, -1.0]], np.float32)
W = np.array([[1.0, -1.0], [0.5, 1.0], [-1.0, 0.5]], np.float32)


def _guided(op, grad):
    return grad * tf.cast(grad > 0.0, grad.dtype) * tf.cast(op.outputs[0] > 0.0, grad.dtype)


GUIDED = "GradcompatContextGuided"
tf.RegisterGradient(GUIDED)(_guided)


@tf.custom_gradient
def _guided_relu(x):
    y = tf.nn.relu(x)

    def grad(dy):
        return dy * tf.cast(dy > 0.0, dy.dtype) * tf.cast(y > 0.0, dy.dtype)
    return y, grad


def _network(x, relu):
    return tf.matmul(relu(tf.matmul(x, W) - 0.25), -W.T)


def _expected() -> np.ndarray:
    x = tf.constant(X)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = _network(x, _guided_relu)
    return tape.gradient(y, x).numpy()


def _overridden(x):
    with compat.gradient_override_map({"Relu": GUIDED}):
        return _network(x, tf.nn.relu)


@contextlib.contextmanager
def guided_relu():  # tensorpack's tfutils.symbolic_functions.guided_relu, migrated by compat-rewrite
    with compat.gradient_override_map({"Relu": GUIDED}):
        yield


def test_the_override_differs_from_plain_relu_here() -> None:
    x = tf.constant(X)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = _network(x, tf.nn.relu)
    assert not np.allclose(tape.gradient(y, x).numpy(), _expected())


def test_an_eager_tape_over_a_tf_function_gets_the_overridden_gradient() -> None:
    x = tf.constant(X)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.function(_overridden)(x)
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), _expected(), rtol=1e-6)


@pytest.mark.parametrize("how", ["inner_tape", "tf_gradients", "context_manager_around_yield"])
def test_gradients_taken_inside_the_tf_function_get_it_too(how: str) -> None:
    @tf.function
    def saliency(x):
        if how == "tf_gradients":
            return tf.gradients(_overridden(x), x)[0]
        with tf.GradientTape() as tape:  # a tape looks gradients up by op type: the op is recorded again
            tape.watch(x)
            if how == "inner_tape":
                y = _overridden(x)
            else:
                with guided_relu():
                    y = _network(x, tf.nn.relu)
        return tape.gradient(y, x)

    np.testing.assert_allclose(saliency(tf.constant(X)).numpy(), _expected(), rtol=1e-6)


def test_a_keras_train_step_honours_a_layer_that_enters_it() -> None:
    class GuidedReluLayer(tf.keras.layers.Layer):
        def call(self, x):
            with compat.gradient_override_map({"Relu": GUIDED}):
                return tf.nn.relu(x)

    def gradient(layer):
        inputs = tf.keras.Input((3,))
        dense = tf.keras.layers.Dense(2, kernel_initializer=tf.constant_initializer(W), bias_initializer="zeros")
        model = tf.keras.Model(inputs, tf.keras.layers.Dense(1, kernel_initializer="ones")(layer(dense(inputs))))

        @tf.function
        def step(x):
            with tf.GradientTape() as tape:
                loss = tf.reduce_sum(model(x) * tf.constant([[1.0], [-1.0]]))
            return tape.gradient(loss, dense.kernel)
        return step(tf.constant(X)).numpy()

    reference = gradient(tf.keras.layers.Lambda(_guided_relu))
    np.testing.assert_allclose(gradient(GuidedReluLayer()), reference, rtol=1e-6)
    assert not np.allclose(gradient(tf.keras.layers.ReLU()), reference)


def test_a_tf1_graph_and_session_get_the_same_gradient_as_tf1s_own_map() -> None:
    results = []
    for use_compat in (False, True):
        graph = tf.Graph()
        with graph.as_default():
            x = tf.compat.v1.placeholder(tf.float32, X.shape)
            entered = (compat.gradient_override_map({"Relu": GUIDED}) if use_compat
                       else graph.gradient_override_map({"Relu": GUIDED}))
            with entered:
                y = _network(x, tf.nn.relu)
            gradient = tf.compat.v1.gradients(y, x)[0]
            with tf.compat.v1.Session(graph=graph) as session:
                results.append(session.run(gradient, {x: X}))
    np.testing.assert_allclose(results[1], results[0], rtol=1e-6)
    np.testing.assert_allclose(results[1], _expected(), rtol=1e-6)


def test_eagerly_it_refuses_instead_of_computing_plain_gradients() -> None:
    with pytest.raises(GradientOverrideError, match="entered eagerly.*compat.override_gradients"):
        with compat.gradient_override_map({"Relu": GUIDED}):
            pass


def test_a_block_that_builds_no_overridden_op_is_refused_unless_asked() -> None:
    @tf.function(autograph=False)  # autograph would re-raise it as a StagingError quoting it
    def nothing(x, require_match):
        with compat.gradient_override_map({"Relu": GUIDED}, require_match=require_match):
            return x * 2.0

    with pytest.raises(GradientOverrideError, match="built no op of type Relu"):
        nothing(tf.constant(X), True)
    np.testing.assert_allclose(nothing(tf.constant(X), False).numpy(), X * 2.0)


def test_an_op_built_in_a_nested_tf_function_is_refused() -> None:
    inner = tf.function(lambda x: tf.nn.relu(x))

    @tf.function(autograph=False)
    def nested(x):
        with compat.gradient_override_map({"Relu": GUIDED}):
            return inner(x) + tf.nn.relu(x)

    with pytest.raises(GradientOverrideError, match="in a graph of its own"):
        nested(tf.constant(X))


def test_a_gradient_function_and_bad_maps() -> None:
    @tf.function
    def saliency(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            with compat.gradient_override_map({"Relu": _guided}):
                y = _network(x, tf.nn.relu)
        return tape.gradient(y, x)

    np.testing.assert_allclose(saliency(tf.constant(X)).numpy(), _expected(), rtol=1e-6)
    with pytest.raises(ValueError, match="gradient_override_map: 'Rleu' is not an op type.*did you mean 'Relu'"):
        with compat.gradient_override_map({"Rleu": GUIDED}):
            pass
    with pytest.raises(ValueError, match="'NoSuchGradient', is not registered"):
        with compat.gradient_override_map({"Relu": "NoSuchGradient"}):
            pass
