"""Upstream capture in a child: wrap the gradient functions user code registers, and record what they receive.

The original side wraps `RegisterGradient` functions and Defun `python_grad_func`s; the rewritten side wraps
`tf.custom_gradient`'s inner `grad`. A Defun `grad_func` or a built-in gradient (an override map onto
"Identity") cannot be wrapped: such a side records nothing and its upstream is reported as not observable.
Records are made at run time by a `tf.numpy_function` the returned gradients depend on, as compat.probe does.
"""

from __future__ import annotations

import functools
import inspect
import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import tensorflow as tf

from compat.probe import recorded_gradients
from compat.results import Upstream

Key = tuple[str, str, str]


class Recorder:
    """Upstreams per case key, recorded at run time by every wrapped gradient function built for that case."""

    def __init__(self) -> None:
        self.current: Key | None = None
        self.wrapped = 0
        self._calls: dict[Key, list[tuple[Upstream, ...]]] = {}
        self._lock = threading.Lock()
        self._keep: list[Callable[..., np.int64]] = []  # tf.numpy_function holds its callable weakly

    def reset(self, key: Key) -> None:
        with self._lock:
            self._calls.pop(key, None)

    def calls(self, key: Key) -> tuple[tuple[Upstream, ...], ...] | None:
        """The calls recorded for `key`, or None when nothing of this side could be instrumented."""
        if not self.wrapped:
            return None
        with self._lock:
            return tuple(self._calls.get(key, ()))

    def around(self, upstreams: Sequence[Any], compute: Callable[[], Any]) -> Any:
        """`compute()`'s gradients, made to depend on recording `upstreams` for the case being built."""
        key = self.current
        if key is None:
            return compute()

        def on_call(upstreams: tuple[Upstream, ...]) -> int:
            with self._lock:
                self._calls.setdefault(key, []).append(upstreams)
                return len(self._calls[key])

        return recorded_gradients(upstreams, compute, on_call, self._keep, name="gradcompat_verify_probe")

    def op_gradient(self, function: Callable[..., Any]) -> Callable[..., Any]:
        """`function(op, *grads)` (RegisterGradient, python_grad_func) recording `grads`."""
        self.wrapped += 1

        @functools.wraps(function)
        def gradient(op: Any, *grads: Any) -> Any:
            return self.around(grads, lambda: function(op, *grads))

        return gradient

    def inner_gradient(self, grad: Callable[..., Any]) -> Callable[..., Any]:
        """A `tf.custom_gradient` inner `grad(*dys[, variables=...])` recording `dys`; TensorFlow inspects
        the signature for `variables`, so the wrapper accepts keywords only when `grad` does."""
        spec = inspect.getfullargspec(grad)
        if "variables" in spec.args or "variables" in spec.kwonlyargs or spec.varkw is not None:
            return lambda *dys, **kwargs: self.around(dys, lambda: grad(*dys, **kwargs))
        return lambda *dys: self.around(dys, lambda: grad(*dys))


def instrument_legacy(recorder: Recorder) -> None:
    """Wrap the functions given to `RegisterGradient` and Defun's `python_grad_func` from now on."""
    from tensorflow.python.framework import function, ops

    class RegisterGradient(ops.RegisterGradient):
        def __call__(self, f: Callable[..., Any]) -> Callable[..., Any]:
            super().__call__(recorder.op_gradient(f))
            return f

    class Defun(function.Defun):
        def __init__(self, *input_types: Any, **kwargs: Any) -> None:
            if kwargs.get("python_grad_func") is not None:
                kwargs["python_grad_func"] = recorder.op_gradient(kwargs["python_grad_func"])
            super().__init__(*input_types, **kwargs)

    ops.RegisterGradient = RegisterGradient  # type: ignore[misc]
    tf.compat.v1.RegisterGradient = RegisterGradient
    function.Defun = Defun  # type: ignore[misc]


def instrument_custom_gradient(recorder: Recorder) -> None:
    """Wrap the inner `grad` of every `tf.custom_gradient` function defined from now on."""
    original = tf.custom_gradient

    def custom_gradient(f: Callable[..., Any] | None = None) -> Any:
        if f is None:
            return custom_gradient

        @functools.wraps(f)
        def forward(*args: Any, **kwargs: Any) -> Any:
            outputs, grad = f(*args, **kwargs)
            return outputs, recorder.inner_gradient(grad)

        recorder.wrapped += 1
        return original(forward)

    tf.custom_gradient = custom_gradient
    tf.compat.v1.custom_gradient = custom_gradient
