"""The baseline's SavedModel contexts: save every case, take its gradients in one fresh loading process."""

from __future__ import annotations

import contextlib
import io
import itertools
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import tensorflow as tf

from baseline.contexts import BaselineCase, Grads, signature_shape
from compat.contexts.isolation import isolate

_SAVED_LOADER = """
import contextlib, json, sys
import numpy as np, tensorflow as tf
directory = sys.argv[1]
manifest = json.load(open(directory + "/cases.json"))
modules = [tf.saved_model.load(directory + "/" + name) for name in manifest["models"]]
out = {}


def second_order_target(grads):
    terms = [tf.reduce_sum(tf.cast(tf.convert_to_tensor(g), tf.float32)) for g in grads if g is not None]
    return tf.add_n(terms) if terms else None


def loaded(module, index):
    forward, loss = getattr(module, f"forward_{index}"), getattr(module, f"loss_{index}")
    grad_ys = getattr(module, f"grad_ys_{index}", None)
    inputs = [tf.constant(v.numpy()) for v in getattr(module, f"inputs_{index}")]
    return forward, loss, grad_ys, inputs, list(getattr(module, f"variables_{index}"))


def tape_grads(case, order):
    forward, loss, grad_ys, inputs, variables = case
    sources = [*inputs, *variables]
    with tf.GradientTape() if order == 2 else contextlib.nullcontext() as outer:
        if order == 2:
            outer.watch(sources)
        with tf.GradientTape() as tape:
            tape.watch(sources)
            target = loss(*forward(*inputs))
        grads = tape.gradient(target, sources, output_gradients=grad_ys(target) if grad_ys else None)
        if order == 1:
            return grads
        total = second_order_target(grads)
    return [None] * len(sources) if total is None else outer.gradient(total, sources)


def symbolic_grads(case, order, inputs):
    forward, loss, grad_ys, _, variables = case
    sources = [*inputs, *variables]
    target = loss(*forward(*inputs))
    grads = tf.gradients(target, sources, grad_ys=grad_ys(target) if grad_ys else None)
    if order == 1:
        return grads
    total = second_order_target(grads)
    return [None] * len(sources) if total is None else tf.gradients(total, sources)


def symbolic(cases, indices):
    # tf.gradients for `indices` in one tf.function; a run that fails is halved (the harness's loader, by
    # compat.contexts.isolation, runs each case alone once both halves of one variant fail).
    def body(*flat):
        results, position = {}, 0
        for index in indices:
            inputs = flat[position: position + len(cases[index][0][3])]
            position += len(inputs)
            with contextlib.suppress(Exception):  # a case that cannot be differentiated: skip it
                grads = symbolic_grads(cases[index][0], cases[index][1], inputs)
                results[str(index)] = [None if g is None else tf.convert_to_tensor(g) for g in grads]
        return results

    try:
        return tf.function(body, autograph=False)(*[x for index in indices for x in cases[index][0][3]])
    except Exception:
        if len(indices) == 1:
            return {}
        middle = len(indices) // 2
        return {**symbolic(cases, indices[:middle]), **symbolic(cases, indices[middle:])}


def save(prefix, index, grads):
    for position, grad in enumerate(grads):
        if grad is not None:
            out[f"{prefix}{index}_{position}"] = tf.cast(tf.convert_to_tensor(grad), tf.float64).numpy()
    out[f"{prefix}{index}_n"] = np.array(len(grads))


for module in modules:
    cases = {index: (loaded(module, index), order) for index, order in manifest["cases"]
             if hasattr(module, f"forward_{index}")}
    for index, (case, order) in cases.items():
        initial = [v.numpy() for v in case[4]]
        try:
            save("", index, tape_grads(case, order))
        except Exception:  # TensorFlow refuses this case (a gradient lost in the round trip): skip it
            pass
        for variable, value in zip(case[4], initial):  # as the harness: restore what a forward changed
            variable.assign(value)
    for key, grads in (symbolic(cases, list(cases)) if cases else {}).items():
        save("s", key, grads)
np.savez(directory + "/grads.npz", **out)
"""


def _saved_case(case: BaselineCase) -> dict[str, Any]:
    """What one case saves: its forward, loss and grad_ys as tf.functions, its variables and its inputs."""
    op, variables = case.op(), [tf.Variable(v) for v in case.variables]
    signature = [tf.TensorSpec(signature_shape(v, case.downstream), tf.as_dtype(v.dtype)) for v in case.inputs]
    forward = tf.function(lambda *xs: tuple(op(*xs, *variables)), input_signature=signature, autograph=False)
    outputs = tf.nest.flatten(forward.get_concrete_function().structured_outputs)
    loss = tf.function(case.downstream.loss, input_signature=[tf.TensorSpec(o.shape, o.dtype) for o in outputs],
                       autograph=False)
    target = loss.get_concrete_function().structured_outputs
    saved = {"forward": forward, "loss": loss, "variables": variables,
             "inputs": [tf.Variable(v, trainable=False) for v in case.inputs]}
    if case.downstream.output_gradients is not None:
        saved["grad_ys"] = tf.function(case.downstream.output_gradients, autograph=False,
                                       input_signature=[tf.TensorSpec(target.shape, target.dtype)])
    return saved


def _save(cases: Sequence[BaselineCase], traced: dict[int, dict[str, Any]], indices: list[int], path: str,
          custom_gradients: bool) -> list[int]:
    """Save `indices` in one tf.Module at `path`; where TensorFlow refuses, the cases it refuses are found as the
    harness finds them (compat.contexts.isolation), each part that saves at a path of its own. The indices saved."""
    attempts = itertools.count()

    def attempt(batch: list[int]) -> tuple[dict[int, None], list[int]]:
        module = tf.Module()
        for index in batch:
            for name, value in traced[index].items():
                setattr(module, f"{name}_{index}", value)
        try:
            with contextlib.redirect_stderr(io.StringIO()):
                tf.saved_model.save(module, f"{path}{next(attempts)}", options=tf.saved_model.SaveOptions(
                    experimental_custom_gradients=custom_gradients))
        except Exception:  # noqa: BLE001 - e.g. a registered gradient TensorFlow cannot trace
            return {}, batch if len(batch) > 1 else []
        return dict.fromkeys(batch), []

    return list(isolate(indices, attempt, variant=lambda index: cases[index].key[3]))


def run_saved(cases: Sequence[BaselineCase], out: Grads, custom_gradients: bool) -> None:
    """Every case's forward and loss saved with tf.saved_model.save, one model per spec and dtype, all loaded by
    one fresh Python process that takes each gradient with an eager tape (nested for second order), then with
    tf.gradients in one tf.function per loaded model (the harness's loader does both, and reports where they
    disagree). The tf.gradients results go in `out` under the cell's key with SYMBOLIC appended to its variant."""
    traced = {}
    for index, case in enumerate(cases):
        with contextlib.suppress(Exception):  # TensorFlow refuses to trace this combination: skip it
            traced[index] = _saved_case(case)
    by_unit: dict[tuple[str, str], list[int]] = {}  # one model per spec and dtype, as the harness saves them
    for index in traced:
        by_unit.setdefault((cases[index].key[0], cases[index].key[2]), []).append(index)
    with tempfile.TemporaryDirectory() as directory:
        saved = [index for unit, indices in enumerate(by_unit.values())
                 for index in _save(cases, traced, indices, f"{directory}/model_{unit}_", custom_gradients)]
        models = sorted(p.name for p in Path(directory).iterdir())
        manifest = [(index, cases[index].downstream.order) for index in saved]
        Path(f"{directory}/cases.json").write_text(json.dumps({"models": models, "cases": manifest}))
        subprocess.run([sys.executable, "-c", _SAVED_LOADER, directory], check=True, capture_output=True,
                       env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
        with np.load(f"{directory}/grads.npz") as grads:
            for index, _ in manifest:
                spec, scenario, dtype, variant = cases[index].key
                for prefix, key in (("", cases[index].key), ("s", (spec, scenario, dtype, variant + SYMBOLIC))):
                    if f"{prefix}{index}_n" in grads:
                        out[key] = [grads.get(f"{prefix}{index}_{p}") for p in range(int(grads[f"{prefix}{index}_n"]))]


SYMBOLIC = "#tf.gradients"
"""Appended to a saved_model cell's variant in the baseline's results: what tf.gradients computed there."""
