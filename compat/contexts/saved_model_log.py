"""The saved upstream log: gradient functions traced for a SavedModel append their upstreams to a saved variable.

A `tf.numpy_function` cannot run in the process that loads a SavedModel, so while saving, every probe's
upstream tensors are serialized and appended (after a header naming the call site) to one string `tf.Variable`
saved with the model. The loading process returns the log's entries after differentiating; `deliver` records one
call per logged entry, so a gradient function that never ran in the loader records nothing.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import tensorflow as tf

from compat.comparison import Location, compare_arrays, compare_upstream
from compat.contexts.base import Failed, Ran
from compat.contexts.saved_model_loader import decode_array
from compat.exceptions import first_line
from compat.probe import Probe
from compat.results import Upstream, intern_array

Call = tuple[Probe, tuple[Upstream, ...]]

_UNLOGGED = ("the gradient function runs inside a tf.while_loop, whose loaded gradient fails with the saved upstream "
             "log captured in it (TensorFlow: '... is in list of internal_captures'), so the model was saved and "
             "loaded again without the log")


class LoggedUpstreams:
    """An `UpstreamSink` appending each captured call to `log`, a string tf.Variable of unknown length."""

    unobservable = ("the gradient function was built where the saved upstream log (a tf.Variable) cannot be "
                    "assigned; calls and upstreams are unknown")

    def __init__(self, log: tf.Variable):
        self.log = log
        self._sites: dict[bytes, tuple[Probe, Any, int]] = {}
        self._refusing = False

    @contextlib.contextmanager
    def refusing(self) -> Iterator[None]:
        """While active, capture nothing (the saved model then holds no log in its gradients), saying why."""
        self._refusing, self.unobservable = True, _UNLOGGED
        try:
            yield
        finally:
            self._refusing, self.unobservable = False, type(self).unobservable

    def capture(self, probe: Probe, site: Any, tensors: list[tf.Tensor]) -> Any:
        if tf.executing_eagerly() or self._refusing:
            return None
        key = str(len(self._sites)).encode()
        try:
            entries = tf.stack([tf.io.serialize_tensor(tf.constant(key)),
                                *(tf.io.serialize_tensor(tensor) for tensor in tensors)])
            appended = self.log.assign(tf.concat([self.log, entries], 0), read_value=False)
        except Exception:  # noqa: BLE001 - a graph that cannot capture the variable: not observable, never guessed
            return None
        self._sites[key] = (probe, site, len(tensors))
        return appended if appended is not None else tf.constant(0, tf.int64)

    def parse(self, entries: Sequence[str]) -> list[Call]:
        """The calls logged in `entries` (base64 TensorProtos, as the loader returns them), in order."""
        values = [decode_array(entry) for entry in entries]
        calls: list[Call] = []
        position = 0
        while position < len(values):
            key = values[position].item()
            if key not in self._sites:
                raise RuntimeError(f"the loaded upstream log names call site {key!r}, which this process never "
                                   f"traced; the SavedModel and its cases are out of step")
            probe, site, count = self._sites[key]
            tensors = [intern_array(value) for value in values[position + 1: position + 1 + count]]
            calls.append((probe, site.records(tensors)))
            position += 1 + count
        return calls

    def deliver(self, entries: Sequence[str]) -> None:
        """Record one call per logged entry on the probe that traced it."""
        for probe, call in self.parse(entries):
            probe.record_call(call)


def loader_notes(tape: Ran | Failed, gradients: Ran | Failed, tape_calls: Sequence[Call],
                 gradients_calls: Sequence[Call]) -> str | None:
    """How tf.gradients in a tf.function disagreed with the eager tape in the loading process, or None."""
    problems: list[str] = []
    match tape, gradients:
        case (Failed(error=error), Ran()) | (Ran(), Failed(error=error)):
            failed, other = ("the tape", "tf.gradients") if isinstance(tape, Failed) else ("tf.gradients", "the tape")
            problems.append(f"{failed} failed ({type(error).__name__}: {first_line(error, 200)}) where {other} "
                            "did not")
        case Failed(error=tape_error), Failed(error=gradients_error) if type(tape_error) is not type(gradients_error):
            problems.append(f"tf.gradients failed with {type(gradients_error).__name__}: "
                            f"{first_line(gradients_error, 200)}")
        case Ran(), Ran():
            problems += _grad_differences(tape, gradients)
    if len(tape_calls) != len(gradients_calls):
        problems.append(f"the gradient function ran {len(gradients_calls)} time(s) under tf.gradients, "
                        f"{len(tape_calls)} under the tape")
    else:
        for number, ((_, mine), (_, theirs)) in enumerate(zip(tape_calls, gradients_calls, strict=False)):
            problems += [f"call {number}: {problem}" for problem in _upstream_differences(mine, theirs)]
    if not problems:
        return None
    return ("in the loading process, tf.gradients inside a tf.function disagreed with the eager tape: "
            + "; ".join(problems))


def _close(a: np.ndarray, b: np.ndarray) -> bool:
    """Same shape, dtype and values within the dtype's tolerance, as the comparison library decides."""
    return not compare_arrays(Location("input_grad"), a, b)


def _grad_differences(tape: Ran, gradients: Ran) -> list[str]:
    problems = []
    kinds = zip(tape.input_grad_kinds, gradients.input_grad_kinds, strict=False)
    pairs = zip(tape.input_grads, gradients.input_grads, strict=False)
    for index, ((a, b), (kind_a, kind_b)) in enumerate(zip(pairs, kinds, strict=False)):
        if kind_a != kind_b:
            problems.append(f"input_grad[{index}] is {kind_b} under tf.gradients, {kind_a} under the tape")
        if a is not None and b is not None and not _close(a, b):
            problems.append(f"input_grad[{index}] values differ (tf.gradients {np.array2string(b, threshold=6)}, "
                            f"tape {np.array2string(a, threshold=6)})")
    return problems


def _upstream_differences(mine: tuple[Upstream, ...], theirs: tuple[Upstream, ...]) -> list[str]:
    problems = []
    for index, (a, b) in enumerate(zip(mine, theirs, strict=False)):
        if a.kind != b.kind:
            problems.append(f"upstream[{index}] is {b.kind} under tf.gradients, {a.kind} under the tape")
        elif breaking := [d for d in compare_upstream(Location("upstream", index), a, b) if d.breaking]:
            problems.append(f"upstream[{index}] differs ({breaking[0].kind}) between tf.gradients and the tape")
    return problems
