"""The baseline as a whole: what a user knows before writing it (the plan), and every context run over it."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

import tensorflow as tf

from baseline.contexts import (
    BaselineCase,
    Grads,
    run_eager,
    run_function,
    run_graph,
    run_mixed_precision,
    run_wrapped_eager,
)
from baseline.gradients import gradients_fn, tape_fn
from baseline.keras_fit import run_keras_fit
from baseline.mechanisms import BASELINE_MECHANISMS
from baseline.saved_model import run_saved
from compat.catalogue import CATALOGUE
from compat.downstream import Downstream
from compat.dtypes import cast_spec
from compat.scenarios import SCENARIOS
from compat.signature import output_signature
from compat.spec import GradientSpec

SAVED_CONTEXTS = ("saved_model", "saved_model_stripped")
"""Run once over every plan's cases (one model saved per spec and dtype, one loading process for them all)."""

BASELINE_CONTEXTS: dict[str, Callable[[Sequence[BaselineCase], Grads], None]] = {
    "v1_session": lambda cases, out: run_graph(cases, gradients_fn(tf.compat.v1.gradients), out),
    "v1_tape": lambda cases, out: run_graph(cases, tape_fn, out),
    "eager_tape": lambda cases, out: run_eager(cases, tape_fn, out),
    "function_tape": lambda cases, out: run_function(cases, tape_fn, out),
    "function_gradients": lambda cases, out: run_function(cases, gradients_fn(tf.gradients), out),
    "outer_tape": lambda cases, out: run_wrapped_eager(
        cases, lambda fn, signature: tf.function(fn, input_signature=signature, autograph=False), out),
    "wrap_function": lambda cases, out: run_wrapped_eager(cases, tf.compat.v1.wrap_function, out),
    "xla_tape": lambda cases, out: run_function(cases, tape_fn, out, jit_compile=True),
    "xla_gradients": lambda cases, out: run_function(cases, gradients_fn(tf.gradients), out, jit_compile=True),
    "mixed_precision": run_mixed_precision,
    "keras_fit": run_keras_fit,
    "saved_model": lambda cases, out: run_saved(cases, out, custom_gradients=True),
    "saved_model_stripped": lambda cases, out: run_saved(cases, out, custom_gradients=False),
    "recompute_grad": lambda cases, out: run_wrapped_eager(
        cases, lambda fn, signature: tf.recompute_grad(lambda *xs: list(fn(*xs))), out),
}


@dataclasses.dataclass(frozen=True)
class Plan:
    """What a user knows before writing the code: the spec in one dtype, its output dtypes, its downstreams."""

    spec: GradientSpec
    dtype: str
    output_dtypes: tuple[tf.DType, ...]
    downstreams: tuple[Downstream, ...]


def plan(names: Sequence[str], scenarios: Sequence[str], dtypes: Sequence[str]) -> list[Plan]:
    plans = []
    for name in names:
        for dtype in dtypes:
            typed = cast_spec(CATALOGUE[name](), dtype)
            try:
                applicable = [SCENARIOS[s] for s in scenarios if SCENARIOS[s].skip_reason(typed) is None]
            except Exception:  # noqa: BLE001 - a forward that fails: the harness skips it too.
                continue
            if applicable:
                plans.append(Plan(typed, dtype, output_signature(typed).dtypes,
                                  tuple(s.downstream(typed) for s in applicable)))
    return plans


def run_baseline(plans: Sequence[Plan]) -> Grads:
    out: Grads = {}
    deferred: dict[str, list[BaselineCase]] = {context: [] for context in SAVED_CONTEXTS}
    for p in plans:
        for context, run_context in BASELINE_CONTEXTS.items():
            cases = [BaselineCase((p.spec.name, d.name, p.dtype, f"{mechanism}@{context}"),
                                  lambda b=build, p=p: b(p.spec, p.output_dtypes), p.spec.example_inputs,
                                  p.spec.variables, d)
                     for mechanism, build in BASELINE_MECHANISMS.items() for d in p.downstreams]
            if context in deferred:
                deferred[context] += cases
            else:
                run_context(cases, out)
    for context, cases in deferred.items():
        BASELINE_CONTEXTS[context](cases, out)
    return out
