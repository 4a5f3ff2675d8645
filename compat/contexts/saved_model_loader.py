"""The SavedModel loading process: load saved cases in a fresh interpreter and differentiate each there.

Run by the `saved_model` contexts as `python -m compat.contexts.saved_model_loader --serve` (one DIRECTORY per
stdin line, `done` on stdout after each) or with one DIRECTORY argument. The user's gradient code is never
imported here, only what `tf.saved_model.save` wrote. DIRECTORY holds `manifest.json` (each saved group and its
cases' inputs) and receives `result.json`: per case and per differentiation mode (`tape`: an eager
tf.GradientTape per case, `gradients`: tf.gradients for the whole group in one tf.function) the input gradients
or the exception, and the upstream log entries the saved gradient functions appended.
"""

from __future__ import annotations

import base64
import functools
import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from compat.child import die_with_parent
from compat.contexts.isolation import isolate

MODES = ("tape", "gradients")
MANIFEST = "manifest.json"
RESULT = "result.json"


def encode_array(value: np.ndarray) -> str:
    """A numpy array (bfloat16 included) as base64 of its TensorProto."""
    import tensorflow as tf  # noqa: PLC0415 - the codec is imported by the context before TensorFlow is needed

    return base64.b64encode(tf.make_tensor_proto(value).SerializeToString()).decode("ascii")


def decode_array(text: str) -> np.ndarray:
    """The inverse of `encode_array`; also decodes a `tf.io.serialize_tensor` result."""
    return decode_proto(base64.b64decode(text))


def decode_proto(raw: bytes) -> np.ndarray:
    import tensorflow as tf  # noqa: PLC0415
    from tensorflow.core.framework import tensor_pb2  # noqa: PLC0415

    return np.asarray(tf.make_ndarray(tensor_pb2.TensorProto.FromString(raw)))


def _error(exc: BaseException, phase: str) -> dict[str, Any]:
    import tensorflow as tf  # noqa: PLC0415

    kind = "tensorflow" if isinstance(exc, tf.errors.OpError) else "python"
    return {"type": type(exc).__name__, "kind": kind, "message": getattr(exc, "message", None) or str(exc),
            "phase": phase}


def _loaded_case(module: Any, entry: dict[str, Any]) -> tuple[Any, list[Any], list[np.ndarray]]:
    """A compat Case whose op is the loaded forward and whose downstream is the loaded loss (and grad_ys)."""
    from compat.contexts.base import Case  # noqa: PLC0415
    from compat.downstream import Downstream  # noqa: PLC0415

    index = entry["index"]
    forward, loss = getattr(module, f"forward_{index}"), getattr(module, f"loss_{index}")
    grad_ys = getattr(module, f"grad_ys_{index}", None)
    variables = list(getattr(module, f"variables_{index}", ()))
    inputs = [decode_array(text) for text in entry["inputs"]]
    num_inputs = len(inputs)
    downstream = Downstream("saved", lambda *outputs: loss(*outputs), order=entry["order"],
                            output_gradients=None if grad_ys is None else lambda target: grad_ys(target))
    case = Case(build=lambda: lambda *sources: tuple(forward(*sources[:num_inputs])), inputs=tuple(inputs),
                downstream=downstream, variables=tuple(np.asarray(v.numpy()) for v in variables))
    return case, variables, inputs


def _tape(case: Any, variables: list[Any], inputs: list[np.ndarray]) -> dict[str, Any]:
    """The case's gradients by an eager tf.GradientTape (nested for second order)."""
    import tensorflow as tf  # noqa: PLC0415

    from compat.contexts.base import tape_gradients  # noqa: PLC0415

    try:
        grads = tape_gradients(case, [*(tf.constant(x) for x in inputs), *variables]).grads
    except Exception as exc:  # noqa: BLE001 - as EagerTape: an OpError ran, anything else was refused
        return {"error": _error(exc, "run" if isinstance(exc, tf.errors.OpError) else "build")}
    return _grads(case, grads)


def _grads(case: Any, grads: Sequence[Any]) -> dict[str, Any]:
    from compat.contexts.base import grads_outcome  # noqa: PLC0415

    outcome = grads_outcome(grads, case.sources)
    return {"grads": [None if g is None else encode_array(g) for g in outcome.input_grads],
            "kinds": list(outcome.input_grad_kinds)}


def _symbolic(module: Any, loaded: dict[int, tuple[Any, list[Any], list[np.ndarray]]],
              indices: list[int]) -> tuple[dict[int, dict[str, Any]], list[int]]:
    """tf.gradients for `indices` in one tf.function, each case's log read right after its gradients: their
    results, or (a run that failed) the cases to run apart (`compat.contexts.isolation`, as FunctionContext does)."""
    import tensorflow as tf  # noqa: PLC0415

    from compat.contexts.base import symbolic_gradients  # noqa: PLC0415

    refused: dict[int, dict[str, Any]] = {}

    def body(*flat: Any) -> dict[str, Any]:
        out, position = {}, 0
        for index in indices:
            case, variables, inputs = loaded[index]
            xs = flat[position: position + len(inputs)]
            position += len(inputs)
            with tf.control_dependencies([module.log.assign(tf.zeros([0], tf.string))]):
                try:
                    grads = symbolic_gradients(case, [*xs, *variables], tf.gradients).grads
                except Exception as exc:  # noqa: BLE001 - a case that cannot be differentiated is a result
                    refused[index] = {"error": _error(exc, "build")}
                    continue
            anchors = [tf.convert_to_tensor(g.values if isinstance(g, tf.IndexedSlices) else g)
                       for g in grads if g is not None]
            with tf.control_dependencies(anchors):
                log = module.log.read_value()
            out[str(index)] = {"grads": grads, "log": log}
        return out

    flat_inputs = [tf.constant(x) for index in indices for x in loaded[index][2]]
    try:
        values = tf.function(body, autograph=False)(*flat_inputs)
    except Exception as exc:  # noqa: BLE001
        ran = [index for index in indices if index not in refused]
        if len(ran) > 1:
            return refused, ran
        return {**refused, **{index: {"error": _error(exc, "run" if isinstance(exc, tf.errors.OpError) else "build")}
                              for index in ran}}, []
    results = dict(refused)
    for key, value in values.items():
        index = int(key)
        result = _grads(loaded[index][0], value["grads"])
        result["log"] = [base64.b64encode(raw).decode("ascii") for raw in value["log"].numpy()]
        results[index] = result
    return results, []


def _run_group(module: Any, entries: list[dict[str, Any]]) -> dict[str, Any]:
    import tensorflow as tf  # noqa: PLC0415

    results: dict[str, Any] = {}
    loaded = {}
    for entry in entries:
        try:
            loaded[entry["index"]] = _loaded_case(module, entry)
        except Exception as exc:  # noqa: BLE001 - a case whose loaded functions are unusable
            results[str(entry["index"])] = {mode: {"error": _error(exc, "build"), "log": []} for mode in MODES}
    initial = {index: [v.numpy() for v in variables] for index, (_, variables, _) in loaded.items()}
    for index, (case, variables, inputs) in loaded.items():
        module.log.assign(tf.zeros([0], tf.string))
        result = _tape(case, variables, inputs)
        result["log"] = [base64.b64encode(raw).decode("ascii") for raw in module.log.numpy()]
        results[str(index)] = {"tape": result}
    for index, (_, variables, _) in loaded.items():  # the tape ran no optimizer; restore anything a forward changed
        for variable, value in zip(variables, initial[index], strict=True):
            variable.assign(value)
    symbolic = isolate(list(loaded), functools.partial(_symbolic, module, loaded))
    for index, result in symbolic.items():
        result.setdefault("log", [])
        results[str(index)]["gradients"] = result
    return results


def run(directory: Path, load: Callable[[str], Any] | None = None) -> dict[str, Any]:
    """Every case of every group in `directory`'s manifest, each group's SavedModel loaded once."""
    import tensorflow as tf  # noqa: PLC0415

    manifest = json.loads((directory / MANIFEST).read_text())
    results: dict[str, Any] = {}
    for group in manifest["groups"]:
        try:
            module = (load or tf.saved_model.load)(str(directory / group["path"]))
        except Exception as exc:  # noqa: BLE001 - TensorFlow cannot load what it saved: every case says why
            refused = _error(exc, "build")
            results.update({str(entry["index"]): {mode: {"error": refused, "log": []} for mode in MODES}
                            for entry in group["cases"]})
            continue
        results.update(_run_group(module, group["cases"]))
    return results


def handle(directory: Path) -> None:
    """Run `directory`'s manifest and write its result (atomically)."""
    results = run(directory)
    partial = directory / (RESULT + ".part")
    partial.write_text(json.dumps(results))
    os.replace(partial, directory / RESULT)


def main(argv: Sequence[str]) -> int:
    """`DIRECTORY`: handle one directory; `--serve`: one directory per stdin line, answering `done` on stdout."""
    if len(argv) != 2:
        print(f"usage: {argv[0]} DIRECTORY | --serve", file=sys.stderr)
        return 2
    if argv[1] != "--serve":
        handle(Path(argv[1]))
        return 0
    die_with_parent()  # it also ends when the stdin closes; this is for a parent killed while it loads
    answers = os.fdopen(os.dup(sys.stdout.fileno()), "w")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # anything else printed goes to stderr, not the protocol
    for line in sys.stdin:
        handle(Path(line.strip()))
        answers.write("done\n")
        answers.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
