"""TF1 graph contexts: build every case in one fresh tf.Graph and fetch them in one Session.run."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Sequence
from typing import Any

import tensorflow as tf

from compat.contexts.base import (
    Case,
    Context,
    Failed,
    Gradients,
    Outcome,
    grads_outcome,
    input_shape,
    symbolic_gradients,
    tape_gradients,
)
from compat.contexts.isolation import isolate_cases
from compat.probe import PROBE_COLLECTION

GradientsFn = Callable[[Case, Sequence[Any]], Gradients]


class GraphSessionContext(Context):
    """A `tf.compat.v1` graph run by a Session; subclasses choose how gradients are requested."""

    gradients: GradientsFn

    def run(self, cases: Sequence[Case], graph: tf.Graph | None = None) -> list[Outcome]:
        """`graph`: build in this graph instead of a fresh one (code whose import built ops in the default graph
        runs in it, as its program would)."""
        outcomes: list[Outcome | None] = [None] * len(cases)
        fresh = graph is None
        graph = tf.Graph() if graph is None else graph
        built: dict[int, tuple[Gradients, dict[Any, Any]]] = {}
        with graph.as_default():
            for index, case in enumerate(cases):
                try:
                    built[index] = self._build(case)
                except Exception as exc:  # noqa: BLE001 - a case that cannot be built is a result.
                    outcomes[index] = Failed(error=exc, phase="build")
        with tf.compat.v1.Session(graph=graph) as session:
            try:
                with graph.as_default():
                    session.run(tf.compat.v1.global_variables_initializer())
            except Exception as exc:  # noqa: BLE001 - the graph cannot run at all (an op with no kernel here)
                outcomes_run = self._unrunnable_graph(cases, built, exc, fresh)
            else:
                outcomes_run = isolate_cases(cases, list(built), functools.partial(_run_batch, session, cases, built))
        for index, outcome in outcomes_run.items():
            outcomes[index] = outcome
        return outcomes  # type: ignore[return-value]

    def _unrunnable_graph(self, cases: Sequence[Case], built: dict[int, Any], error: Exception,
                          fresh: bool) -> dict[int, Outcome]:
        """Outcomes when a Session cannot run anything in the graph: TensorFlow places the whole graph on its
        first run, so one op without a kernel on this device (the forward's, or a gradient's) fails every
        fetch, the variable initializer included. That is the case's failure at run time, not the context's:
        alone, the case gets TensorFlow's error; several are run again each in a graph of its own."""
        if len(built) == 1 or not fresh:
            return {index: Failed(error=error, phase="run") for index in built}
        return {index: self.run([cases[index]])[0] for index in built}

    def _build(self, case: Case) -> tuple[Gradients, dict[Any, Any]]:
        placeholders = [tf.compat.v1.placeholder(value.dtype, input_shape(value, case.downstream))
                        for value in case.inputs]
        variables = [tf.Variable(value) for value in case.variables]
        records_before = len(tf.compat.v1.get_collection(PROBE_COLLECTION))
        grads = type(self).gradients(case, [*placeholders, *variables])
        # Fetch the case's probe records too: a gradient function that returned only None still ran.
        records = tf.compat.v1.get_collection(PROBE_COLLECTION)[records_before:]
        grads = dataclasses.replace(grads, anchors=[*grads.anchors, *records])
        return grads, dict(zip(placeholders, case.inputs, strict=True))


def _fetchable(computed: Gradients) -> tuple[list[Any], list[Any]]:
    return [g for g in computed.grads if g is not None], computed.anchors


def _unflatten(computed: Gradients, values: tuple[list[Any], list[Any]]) -> tuple[Any, ...]:
    it = iter(values[0])
    return tuple(None if g is None else next(it) for g in computed.grads)


def _run_batch(session: tf.compat.v1.Session, cases: Sequence[Case], built: dict[int, tuple[Gradients, dict[Any, Any]]],
               indices: list[int]) -> tuple[dict[int, Outcome], list[int]]:
    """Fetch the gradients of `indices` in one Session.run: their outcomes, or all of them as failed together."""
    feed: dict[Any, Any] = {}
    for index in indices:
        feed.update(built[index][1])
    try:
        values = session.run({index: _fetchable(built[index][0]) for index in indices}, feed_dict=feed)
    except Exception as exc:  # noqa: BLE001 - a failing case is a result; retried apart to find it.
        if len(indices) > 1:
            return {}, indices
        return {indices[0]: Failed(error=exc, phase="run")}, []
    return {index: grads_outcome(_unflatten(built[index][0], values[index]), cases[index].sources,
                                 built[index][0].variables) for index in indices}, []


class V1Session(GraphSessionContext):
    name = "v1_session"
    summary = "fresh tf.Graph + tf.compat.v1.gradients + Session.run"
    gradients = staticmethod(lambda case, inputs: symbolic_gradients(case, inputs, tf.compat.v1.gradients))


class V1Tape(GraphSessionContext):
    name = "v1_tape"
    summary = "tf.GradientTape inside a tf.compat.v1 graph, run by a Session"
    gradients = staticmethod(tape_gradients)
