"""compat.run on the seed's op: what each variant's gradient function receives, from real TensorFlow."""

import sys

import numpy as np
import pytest
import tensorflow as tf

import compat
from compat.contexts import Crashed, Failed, Refused
from compat.downstream import Downstream
from compat.runner import run_matrix

WEIGHTS = np.array([0.25, -3.0, 7.5], np.float32)
DOWNSTREAMS = {
    "sum": (None, np.ones(3, np.float32)),
    "times_two": (lambda y: tf.reduce_sum(y * 2.0), np.full(3, 2.0, np.float32)),
    "weighted": (lambda y: tf.reduce_sum(y * WEIGHTS), WEIGHTS),
}


@pytest.fixture(scope="module")
def seed_runs(seed_spec):
    spec = seed_spec()
    return {name: compat.run(spec, loss) for name, (loss, _) in DOWNSTREAMS.items()}


@pytest.mark.parametrize("downstream", sorted(DOWNSTREAMS))
def test_seed_runs_in_every_variant(seed_runs, downstream):
    results = seed_runs[downstream]
    assert [r.variant for r in results] == list(compat.VARIANTS)
    assert len(results) == 56
    assert all(r.status in compat.STATUSES for r in results)
    for result in results:
        assert result.variant == f"{result.mechanism}@{result.context}"
        assert (result.status == "ok") == (result.calls > 0 and not result.message)


@pytest.mark.parametrize("downstream", sorted(DOWNSTREAMS))
def test_native_variants_receive_the_downstream_gradient(seed_runs, downstream):
    expected_upstream = DOWNSTREAMS[downstream][1]
    native = [r for r in seed_runs[downstream] if compat.is_native(r.variant)]
    assert {r.variant for r in native} == set(compat.NATIVE_VARIANTS)
    for result in native:
        assert result.status == "ok", result
        assert result.calls == 1, result
        (upstream,) = result.upstream
        assert upstream.kind == "dense"
        # mixed_precision hands float16 over (values unscaled: they compare)
        assert upstream.dtype == ("float16" if result.context == "mixed_precision" else "float32")
        np.testing.assert_array_equal(upstream.value, expected_upstream, err_msg=result.variant)
        np.testing.assert_allclose(result.input_grads[0], 0.5 * expected_upstream, err_msg=result.variant)


def test_override_map_under_an_eager_tape_is_silently_ignored(seed_runs):
    """The seed's own pitfall: eager tapes look gradients up by the real op type, Sign, whose gradient is 0."""
    result = next(r for r in seed_runs["times_two"] if r.variant == "override_map@eager_tape")
    assert result.status == "not_called"
    assert result.calls == 0 and result.upstreams == ()
    assert "never ran the gradient function" in result.message
    np.testing.assert_array_equal(result.input_grads[0], np.zeros(3, np.float32))


def test_static_shapes_are_recorded_as_the_function_saw_them(seed_runs):
    by_variant = {r.variant: r for r in seed_runs["sum"]}
    assert by_variant["custom_gradient@eager_tape"].upstream[0].static_shape == (3,)
    assert by_variant["override_map@v1_session"].upstream[0].static_shape == (3,)
    # A Defun's body is traced from dtypes alone: its upstream has unknown rank.
    assert by_variant["defun_grad_func@v1_session"].upstream[0].static_shape is None


def test_the_same_spec_runs_twice_in_one_process(seed_spec):
    spec = seed_spec("rerun")
    first = compat.run(spec, variants=["override_map@v1_session", "defun_grad_func@v1_session"])
    second = compat.run(spec, variants=["override_map@v1_session", "defun_grad_func@v1_session"])
    for a, b in zip(first, second, strict=True):
        assert a.status == b.status == "ok", (a, b)
        np.testing.assert_array_equal(a.input_grads[0], b.input_grads[0])


def _spec(name, forward, gradient, n_inputs=1):
    return compat.GradientSpec(name, forward, gradient, [np.array([1.0, -2.0, 3.0], np.float32)] * n_inputs)


BROKEN = {
    "raises": (_spec("boom", lambda x: x * 2.0, lambda i, o, u: [u[0] / 0 if False else 1 / 0]),
               "gradient raised ZeroDivisionError: division by zero"),
    "exits": (_spec("bye", lambda x: x * 2.0, lambda i, o, u: sys.exit(0)),
              "gradient raised SystemExit(0) (user code called sys.exit)"),
    "forward": (_spec("fwd", lambda x: x.no_such_method(), lambda i, o, u: [u[0]]),
                "forward raised AttributeError"),
    "forward_exits": (_spec("fwd_exit", lambda x: sys.exit(3), lambda i, o, u: [u[0]]),
                      "forward raised SystemExit(3)"),
    "forward_none": (_spec("fwd_none", lambda x: None, lambda i, o, u: [u[0]]),
                     "forward returned NoneType; return a tensor or a tuple of tensors"),
    "forward_dict": (_spec("fwd_dict", lambda x: {"y": x}, lambda i, o, u: [u[0]]),
                     "forward returned dict"),
    "forward_object": (_spec("fwd_obj", lambda x: (x, object()), lambda i, o, u: [u[0]]),
                       "forward output 1 is object, not a tensor"),
}


@pytest.mark.parametrize("kind", sorted(BROKEN))
def test_broken_user_code_gives_named_errors_in_native_variants(kind):
    spec, expected = BROKEN[kind]
    for result in compat.run(spec, variants=list(compat.NATIVE_VARIANTS)):
        assert result.status == "error", result
        assert result.message.startswith(f"spec `{spec.name}`, variant `{result.variant}`: "), result.message
        assert expected in result.message, result.message


CONTRACT = {
    "shape": _spec("reduce", lambda x: x * 2.0, lambda i, o, u: [tf.reduce_sum(u[0])]),
    "dtype": _spec("cast", lambda x: x * 2.0, lambda i, o, u: [tf.cast(u[0], tf.float64)]),
}


@pytest.mark.parametrize("kind", sorted(CONTRACT))
def test_a_gradient_breaking_its_contract_gets_what_tensorflow_did_per_variant(kind):
    """gradcompat hands the wrong gradient to TensorFlow: each variant shows TensorFlow's own reaction
    (an error naming TensorFlow's message, or silent acceptance), with the violation kept in both."""
    for result in compat.run(CONTRACT[kind]):
        if result.status == "error":
            assert "TensorFlow rejected the gradient" in result.message, result
            assert "broke its contract" in result.message and result.violations, result
        elif result.status == "ok":
            assert result.violations and kind in " ".join(result.violations), result
            assert "TensorFlow accepted a gradient that breaks the contract" in result.message, result
        else:
            assert result.status in ("not_called", "unsupported", "not_observable") and not result.violations, result


def _legacy_sign(mechanism: str, gradient):
    """sign(x) with `gradient(dy) -> list` attached as hand-written legacy or TF2 code does, no gradcompat."""
    from tensorflow.python.framework import function

    if mechanism == "custom_gradient":
        @tf.custom_gradient
        def op(x):
            return tf.sign(x), lambda dy: gradient(dy)
        return op
    if mechanism == "override_map":
        name = f"hand_written_{next(_NAMES)}"
        tf.RegisterGradient(name)(lambda op, dy: gradient(dy))

        def overridden(x):
            with tf.compat.v1.get_default_graph().gradient_override_map({"Sign": name}):
                return tf.sign(x)
        return overridden
    if mechanism == "defun_python_grad_func":
        @function.Defun(tf.float32, python_grad_func=lambda op, dy: gradient(dy))
        def python_grad_op(x):
            return tf.sign(x)
        return python_grad_op

    @function.Defun(tf.float32, tf.float32)
    def grad_func(x, dy):
        return tuple(gradient(dy))

    @function.Defun(tf.float32, grad_func=grad_func)
    def grad_func_op(x):
        return tf.sign(x)
    return grad_func_op


_NAMES = iter(range(10**6))


def _legacy_run(mechanism: str, context: str, gradient) -> BaseException | None:
    """What TensorFlow itself does with that code in `context`: the exception it raises, or None."""
    x_value = np.array([1.0, -2.0, 3.0], np.float32)
    try:
        if context == "v1_session":
            with tf.Graph().as_default():
                x = tf.constant(x_value)
                grads = tf.compat.v1.gradients(tf.reduce_sum(_legacy_sign(mechanism, gradient)(x)), [x])
                with tf.compat.v1.Session() as session:
                    session.run([g for g in grads if g is not None])
        elif context == "eager_tape":
            x = tf.constant(x_value)
            with tf.GradientTape() as tape:
                tape.watch(x)
                loss = tf.reduce_sum(_legacy_sign(mechanism, gradient)(x))
            tape.gradient(loss, x)
        else:
            op = _legacy_sign(mechanism, gradient)

            @tf.function(autograph=False)
            def step(x):
                if context == "function_gradients":
                    return tf.gradients(tf.reduce_sum(op(x)), [x])
                with tf.GradientTape() as tape:
                    tape.watch(x)
                    loss = tf.reduce_sum(op(x))
                return tape.gradient(loss, x)

            step(tf.constant(x_value))
    except Exception as exc:  # noqa: BLE001 - what TensorFlow raised is the fact to compare with
        return exc
    return None


def _masked(text: str) -> str:
    """A message with names TensorFlow numbers per process (ops, functions, nodes) masked."""
    import re

    return re.sub(r"'[^']*'|\"[^\"]*\"", "'…'", text)


WRONG_COUNT_VARIANTS = [f"{m}@{c}" for m in ("defun_grad_func", "defun_python_grad_func", "override_map",
                                              "custom_gradient")
                        for c in ("v1_session", "eager_tape", "function_tape", "function_gradients")]


@pytest.mark.parametrize("count", [2, 0])
def test_a_wrong_number_of_gradients_gets_tensorflows_own_reaction_in_each_variant(count):
    """The gradient is handed to TensorFlow as returned, as for a wrong dtype or shape: each cell quotes what
    TensorFlow itself raises for the same hand-written code (measured here, per mechanism and context), or
    runs where TensorFlow runs it; the count is kept as a contract violation."""
    from compat.exceptions import tensorflow_message

    spec = _spec(f"count_{count}", tf.sign, lambda i, o, u: [0.5 * u[0]] * count)
    spec = compat.GradientSpec(spec.name, spec.forward, spec.gradient, spec.example_inputs, op_type="Sign")
    results = {r.variant: r for r in compat.run(spec, variants=WRONG_COUNT_VARIANTS)}
    raised_somewhere = False
    for variant in WRONG_COUNT_VARIANTS:
        result = results[variant]
        expected = _legacy_run(*variant.split("@"), lambda dy: [0.5 * dy] * count)
        if expected is None:
            assert result.status != "error", (variant, result.message)
            continue
        raised_somewhere = True
        assert result.status in ("error", "unsupported"), (variant, result.message)
        reason = tensorflow_message(expected)
        assert _masked(reason) in _masked(result.message), (variant, reason, result.message)
        if result.status == "error":
            assert f"gradient returned {count} value" in result.message and result.violations, result.message
    assert raised_somewhere


def test_tf2_tapes_silently_accept_a_wrong_shape_that_v1_rejects():
    """The migration pitfall behind the contract difference, measured: v1 raises, eager trains on it."""
    results = {r.variant: r for r in compat.run(CONTRACT["shape"], variants=["custom_gradient@*"])}
    assert results["custom_gradient@v1_session"].status == "error"
    assert "Incompatible shapes" in results["custom_gradient@v1_session"].message
    eager = results["custom_gradient@eager_tape"]
    assert eager.status == "ok" and eager.input_grads[0].shape == ()


def test_wrong_shape_seen_after_the_run_when_the_defun_hides_shapes():
    (result,) = compat.run(CONTRACT["shape"], variants="defun_grad_func@v1_session")
    assert result.status == "ok"
    assert "TensorFlow returned a gradient of shape [] for input 0 of shape [3]" in " ".join(result.violations)


@pytest.mark.parametrize("variant", ["defun_grad_func@v1_session", "defun_python_grad_func@v1_session",
                                     "override_map@v1_session", "custom_gradient@v1_session",
                                     "custom_gradient@v1_tape", "custom_gradient@function_gradients"])
def test_a_gradient_returning_only_none_is_still_called(variant):
    ran = []

    def gradient(inputs, outputs, upstreams):
        ran.append(True)
        return [None]

    (result,) = compat.run(_spec("nothing_back", lambda x: x * 2.0, gradient), variants=variant)
    assert ran and result.status == "ok" and result.calls == 1, result
    np.testing.assert_array_equal(result.upstream[0].value, [1.0, 1.0, 1.0])


@pytest.mark.parametrize("name", ["_private_op", "градиент", "<op>", "a.b/c d"])
def test_any_spec_name_runs_in_every_native_variant(name):
    spec = _spec(name, lambda x: x * 2.0, lambda i, o, u: [3.0 * u[0]])
    for result in compat.run(spec, variants=list(compat.NATIVE_VARIANTS)):
        assert result.status == "ok", result
        np.testing.assert_array_equal(result.input_grads[0], [3.0, 3.0, 3.0])


def test_input_gradients_keep_the_form_tensorflow_returned():
    spec = _spec("sparse_grad", lambda x: x * 2.0,
                 lambda i, o, u: [tf.IndexedSlices(tf.gather(u[0], [0, 2]), tf.constant([0, 2]), tf.constant([3]))])
    results = {r.variant: r for r in compat.run(spec, variants=["custom_gradient@eager_tape",
                                                                "defun_grad_func@v1_session"])}
    eager = results["custom_gradient@eager_tape"]
    assert eager.input_grad_kinds == ("indexed_slices",)
    np.testing.assert_array_equal(eager.input_grads[0], [1.0, 0.0, 1.0])
    assert results["defun_grad_func@v1_session"].input_grad_kinds == ("dense",)


def test_an_indexed_slices_upstream_without_dense_shape_is_recorded_as_unknown():
    @tf.custom_gradient
    def sliced_sum(y):
        def grad(dy):
            return tf.IndexedSlices(tf.gather(dy * tf.ones_like(y), [1, 2]), tf.constant([1, 2]))
        return tf.reduce_sum(y), grad

    spec = _spec("slices", lambda x: x * 2.0, lambda i, o, u: [u[0]])
    (result,) = compat.run(spec, loss=sliced_sum, variants="custom_gradient@eager_tape")
    (upstream,) = result.upstream
    assert upstream.kind == "indexed_slices" and upstream.dense_shape is None
    np.testing.assert_array_equal(upstream.indices, [1, 2])
    with pytest.raises(ValueError, match="never guessed|without a dense_shape"):
        upstream.to_dense()


def test_run_accepts_a_downstream_and_variant_globs(seed_spec):
    spec = seed_spec("globs")
    downstream = Downstream("grad_ys", lambda y: y, output_gradients=lambda target: tf.fill(tf.shape(target), 3.0))
    results = compat.run(spec, downstream, variants=["custom_gradient@*"])
    assert [r.context for r in results] == list(compat.CONTEXTS)
    for result in results:
        assert result.downstream == "grad_ys"
        if result.context == "keras_fit":  # model.fit differentiates its scalar loss: no grad_ys to pass
            assert result.status == "unsupported" and "grad_ys" in result.message
            continue
        if result.context == "saved_model_stripped":  # the loader has no gradient for the op: nothing received
            assert result.status == "unsupported" and result.upstream is None
            continue
        if result.context == "vectorized_map":  # pfor drops the custom gradient: tests/contexts/test_recompute.py
            assert result.status == "not_called" and result.upstream is None
            continue
        np.testing.assert_array_equal(result.upstream[0].value, [3.0, 3.0, 3.0])


def test_unknown_variant_lists_valid_names(seed_spec):
    with pytest.raises(ValueError, match="unknown variant 'custom_gradient@nowhere'.*eager_tape"):
        compat.run(seed_spec("bad"), variants=["custom_gradient@nowhere"])
    with pytest.raises(TypeError, match="needs a compat.GradientSpec"):
        compat.run("not a spec")  # type: ignore[arg-type]


def test_runs_release_their_graphs_and_gradient_registrations(seed_spec):
    """Graph-mode tf.custom_gradient registers a closure over its graph in a global registry at every call;
    without cleanup every run would keep its graphs alive."""
    import gc

    from tensorflow.python.framework import ops

    def live():
        for _ in range(3):  # pfor's traced functions (vectorized_map) free their graphs only on a later pass
            gc.collect()
        return sum(isinstance(o, tf.Graph) for o in gc.get_objects()), len(ops._gradient_registry.list())

    compat.run(seed_spec("leak_warmup"))
    before = live()
    for repeat in range(3):
        assert all(r.status in compat.STATUSES for r in compat.run(seed_spec(f"leak_{repeat}")))
    assert live() == before


def test_tensorflow_refusing_at_run_time_is_unsupported_not_a_user_error():
    """A Defun's symbolic gradient inside a tf.function cannot be run for Round (TF 2.21: no gradient in the
    SymbolicGradient; TF 2.12: the Defun's op is not registered in the runtime): TensorFlow refuses it."""
    from compat.catalogue import CATALOGUE

    (result,) = compat.run(CATALOGUE["dorefa_round"](), variants="defun_grad_func@function_gradients")
    assert result.status == "unsupported", result
    assert "NotFoundError" in result.message and "cannot run this combination" in result.message


def test_a_context_that_fails_itself_makes_error_cells_for_its_variants_only(seed_spec, monkeypatch):
    from compat.contexts import ALL_CONTEXTS as CONTEXTS

    class Broken(type(CONTEXTS["eager_tape"])):
        def run(self, cases):
            raise AttributeError("module 'keras.optimizers' has no attribute 'LossScaleOptimizer'")

    monkeypatch.setitem(CONTEXTS, "eager_tape", Broken())
    results = {r.variant: r for r in compat.run(seed_spec(), variants=["custom_gradient@*"])}
    broken = results["custom_gradient@eager_tape"]
    assert broken.status == "error"
    assert "context `eager_tape` failed with TensorFlow" in broken.message and "LossScaleOptimizer" in broken.message
    assert all(r.status == "ok" for v, r in results.items() if v not in ("custom_gradient@eager_tape",)
               and r.context not in ("mixed_precision", "saved_model_stripped", "vectorized_map")), {
        v: r.message for v, r in results.items()}


def _no_cpu_kernel() -> tuple:
    """An op with no kernel on this machine's CPU, measured: bfloat16 Lgamma (skipped where one exists)."""
    value = np.array([1.5, 2.5], tf.bfloat16.as_numpy_dtype)  # ml_dtypes' type from 2.13 on, TensorFlow's before
    try:
        tf.math.lgamma(tf.constant(value))
    except (tf.errors.NotFoundError, tf.errors.InvalidArgumentError):
        return value, tf.math.lgamma
    pytest.skip("this TensorFlow has a CPU kernel for bfloat16 Lgamma")


def test_an_op_without_a_cpu_kernel_is_the_forwards_failure_in_graph_contexts_too():
    """A Session places the whole graph on its first run, the variable initializer's included: the missing kernel
    used to be blamed on the context (`context v1_session failed`); it is the forward's, as in the eager cell."""
    value, lgamma = _no_cpu_kernel()
    spec = compat.GradientSpec("no_kernel", lgamma, lambda i, o, u: [u[0]], [value], op_type="Lgamma")
    variants = ["*@v1_session", "custom_gradient@v1_tape", "custom_gradient@eager_tape"]
    for result in compat.run(spec, variants=variants):
        assert result.status == "error", (result.variant, result.message)
        assert "context `" not in result.message and "Lgamma" in result.message, result.message
        if result.context != "eager_tape":
            assert "the forward's op `Lgamma` failed at run time" in result.message, result.message


def test_a_case_whose_gradient_has_no_kernel_does_not_sink_the_cases_sharing_its_graph():
    """One case's op without a kernel makes every fetch of its graph fail: the cases are run again apart, so a
    scenario where the gradient is never built (stop_gradient) still runs."""
    value, lgamma = _no_cpu_kernel()

    def gradient(inputs, outputs, upstreams):
        return [tf.cast(lgamma(tf.cast(upstreams[0], value.dtype)), tf.float32)]

    spec = _spec("gradient_no_kernel", tf.identity, gradient)
    stopped = Downstream("stopped", lambda y: tf.reduce_sum(tf.stop_gradient(y)))
    failing, stopped_result = run_matrix(spec, [Downstream("sum", tf.reduce_sum), stopped],
                                                "custom_gradient@v1_session")
    assert failing.status == "error" and "Lgamma" in failing.message and "context `" not in failing.message
    assert stopped_result.status == "not_called", stopped_result.message


def test_tensorflow_refusing_an_api_the_gradient_calls_is_unsupported_with_its_words_not_a_user_error():
    """`tf.gradients` inside a gradient (TF1 code differentiating its forward) is refused eagerly by TensorFlow
    itself; the same gradient runs in a v1 graph. A RuntimeError the user's own code raises stays an error."""
    def autodiff(inputs, outputs, upstreams):
        (grad,) = tf.gradients(outputs[0], [inputs[0]], grad_ys=[upstreams[0]])
        return [0.5 * grad]

    def own(inputs, outputs, upstreams):
        raise RuntimeError("my gradient is broken")

    variants = ["custom_gradient@eager_tape", "custom_gradient@v1_session"]
    refused = {r.variant: r for r in compat.run(_spec("tf_gradients_inside", lambda x: x * 2.0, autodiff),
                                                  variants=variants)}
    with pytest.raises(RuntimeError) as plain:  # what TensorFlow says to the same call, eagerly
        tf.gradients(tf.constant(1.0), [tf.constant(1.0)])
    eager = refused["custom_gradient@eager_tape"]
    assert eager.status == "unsupported" and str(plain.value) in eager.message, eager.message
    assert refused["custom_gradient@v1_session"].status == "ok", refused["custom_gradient@v1_session"].message
    for result in compat.run(_spec("own_runtime_error", lambda x: x * 2.0, own), variants=variants):
        assert result.status == "error" and "gradient raised RuntimeError: my gradient is broken" in result.message


@pytest.mark.parametrize(("outcome", "status", "words"), [
    (Refused("not run: the loss takes a max"), "unsupported", "not run: the loss takes a max"),
    (Crashed("context `eager_tape` failed with TensorFlow 2: KeyError: 1"), "error",
     "context `eager_tape` failed with TensorFlow 2: KeyError: 1"),
    (Failed(ValueError("no such op"), "build"), "unsupported",
     "TensorFlow cannot run this combination: ValueError: no such op"),
    (Failed(ValueError("bad value"), "run"), "error", "failed at run time: ValueError: bad value"),
])
def test_the_runner_words_each_typed_outcome_as_its_cell(seed_spec, outcome, status, words):
    from compat.probe import Probe
    from compat.runner import to_result

    probe = Probe(seed_spec(), "custom_gradient@eager_tape")
    result = to_result(probe, Downstream("sum", tf.reduce_sum), outcome)
    assert (result.status, result.message) == (status, f"{probe.where}: {words}")
