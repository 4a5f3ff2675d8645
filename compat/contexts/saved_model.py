"""SavedModel contexts: the forward saved with `tf.saved_model.save`, loaded and differentiated in a fresh process.

A batch of cases is one `tf.Module` (per case a forward `tf.function`, its loss and `grad_ys` functions and its
variables) saved once, and loaded by one child process (`compat.contexts.saved_model_loader`) that never sees the
user's Python code. There the gradient is taken twice per case: by an eager `tf.GradientTape` (the cell's
outcome: how a loaded model is trained) and by `tf.gradients` inside a `tf.function`; a disagreement between the
two is reported in the cell's message.

The probe's `tf.numpy_function` cannot run in another process, so gradient functions traced while saving append
their upstreams (serialized) to a string `tf.Variable` saved with the model; the loader returns that log.
"""

from __future__ import annotations

import builtins
import contextlib
import dataclasses
import functools
import io
import json
import logging
import os
import shutil
import sys
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import tensorflow as tf

from compat.child import child_env
from compat.contexts import saved_model_loader as loader
from compat.contexts.base import Case, Context, Failed, Outcome, Ran, input_shape
from compat.contexts.isolation import isolate_cases
from compat.contexts.saved_model_log import LoggedUpstreams, loader_notes
from compat.contexts.saved_model_process import LoaderFailed, LoaderProcess
from compat.exceptions import first_line
from compat.probe import capturing_upstreams

_LOG_NAME = "gradcompat_upstream_log"


class LoadedError(Exception):
    """An exception raised in the loading process that has no class of the same name here."""


class SavedModelContext(Context):
    """Save the forward, load it in a child process, take gradients there."""

    custom_gradients = True
    """`tf.saved_model.SaveOptions(experimental_custom_gradients=...)`."""
    timeout_seconds = 600.0
    """How long the loading process may take for a whole batch before it is killed (its cases are errors)."""

    def __init__(self) -> None:
        self._loader: LoaderProcess | None = None

    def unavailable(self) -> str | None:
        if not sys.executable or not os.access(sys.executable, os.X_OK):
            return f"context `{self.name}` runs the loader in a child Python process; sys.executable is unusable"
        if not os.access(tempfile.gettempdir(), os.W_OK):
            return (f"context `{self.name}` saves models under {tempfile.gettempdir()}, which is not writable; "
                    f"set TMPDIR")
        return None

    def loader_command(self) -> list[str]:
        """The loading process, serving one directory per stdin line (see compat.contexts.saved_model_process)."""
        return [sys.executable, "-m", loader.__name__, "--serve"]

    def run(self, cases: Sequence[Case]) -> list[Outcome]:
        directory = Path(tempfile.mkdtemp(prefix="gradcompat-saved-model-"))
        try:
            log = tf.Variable(tf.zeros([0], tf.string), shape=[None], trainable=False, name=_LOG_NAME)
            sink = LoggedUpstreams(log)
            outcomes = self._save_and_load(cases, range(len(cases)), sink, directory / "logged")
            # A gradient in a tf.while_loop body that captures the log makes the loaded loop's gradient fail
            # ("... is in list of internal_captures"), where the user's own gradient works: those cases run again
            # saved without the log (their calls are then not observable).
            unlogged = [index for index, outcome in outcomes.items()
                        if isinstance(outcome, Failed) and _LOG_NAME in str(outcome.error)]
            if unlogged:
                with sink.refusing():
                    outcomes.update(self._save_and_load(cases, unlogged, sink, directory / "unlogged"))
        finally:
            shutil.rmtree(directory, ignore_errors=True)
        return [outcomes[index] for index in range(len(cases))]

    def _save_and_load(self, cases: Sequence[Case], indices: Iterable[int], sink: LoggedUpstreams,
                       directory: Path) -> dict[int, Outcome]:
        """Trace `indices`, save them (as few SavedModels as TensorFlow allows) and load them in the child process."""
        outcomes: dict[int, Outcome] = {}
        directory.mkdir()
        with capturing_upstreams(sink):
            traced = {}
            for index in indices:
                try:
                    traced[index] = _trace(cases[index])
                except Exception as exc:  # noqa: BLE001 - a case that cannot be traced is a result.
                    outcomes[index] = Failed(error=exc, phase="build")
            groups: list[tuple[str, list[int]]] = []
            save = functools.partial(self._save, sink.log, traced, directory, groups)
            saved = isolate_cases(cases, list(traced), save)
        outcomes.update({index: outcome for index, outcome in saved.items() if outcome is not None})
        if groups:
            outcomes.update(self._load(directory, cases, groups, sink))
        return outcomes

    def _save(self, log: tf.Variable, traced: dict[int, dict[str, Any]], directory: Path,
              groups: list[tuple[str, list[int]]], indices: list[int]) -> tuple[dict[int, Outcome | None], list[int]]:
        """Save `indices` as one SavedModel (noted in `groups`; their outcomes come from loading it): None for each,
        or, when TensorFlow refuses, the refusal of a lone case, or all of them to be saved apart."""
        module = tf.Module()
        module.log = log
        for index in indices:
            for name, value in traced[index].items():
                setattr(module, f"{name}_{index}", value)
        path = directory / f"group_{len(groups)}_{indices[0]}"
        options = tf.saved_model.SaveOptions(experimental_custom_gradients=self.custom_gradients)
        try:
            with _quiet():
                tf.saved_model.save(module, str(path), options=options)
        except Exception as exc:  # noqa: BLE001 - TensorFlow refuses to save (e.g. a gradient it cannot trace)
            shutil.rmtree(path, ignore_errors=True)
            if len(indices) == 1:
                return {indices[0]: Failed(error=_save_refusal(exc), phase="build")}, []
            return {}, indices
        groups.append((path.name, indices))
        return dict.fromkeys(indices), []

    def _load(self, directory: Path, cases: Sequence[Case], groups: list[tuple[str, list[int]]],
              sink: LoggedUpstreams) -> dict[int, Outcome]:
        manifest = {"groups": [{"path": path, "cases": [
            {"index": index, "order": cases[index].downstream.order,
             "inputs": [loader.encode_array(value) for value in cases[index].inputs]} for index in group]}
            for path, group in groups]}
        (directory / loader.MANIFEST).write_text(json.dumps(manifest))
        try:
            results = self._run_loader(directory)
        except LoaderFailed as exc:
            return {index: Failed(error=exc, phase="run") for _, group in groups for index in group}
        outcomes: dict[int, Outcome] = {}
        for _, group in groups:
            for index in group:
                found = results.get(str(index))
                if found is None:
                    outcomes[index] = Failed(error=LoaderFailed(f"the loading process returned no result for "
                                                                 f"case {index}"), phase="run")
                    continue
                outcomes[index] = _outcome(found, sink)
        return outcomes

    def _run_loader(self, directory: Path) -> dict[str, Any]:
        """Have this context's loading process handle `directory`; its result, or LoaderFailed."""
        command = self.loader_command()
        if self._loader is None or self._loader.command != command:
            if self._loader is not None:
                self._loader.close()
            env = child_env(TF_CPP_MIN_LOG_LEVEL=os.environ.get("TF_CPP_MIN_LOG_LEVEL", "3"))
            self._loader = LoaderProcess(command, env)
        self._loader.request(directory, self.timeout_seconds)
        result = directory / loader.RESULT
        if not result.exists():
            raise LoaderFailed("the SavedModel loading process answered but wrote no result")
        loaded: dict[str, Any] = json.loads(result.read_text())
        return loaded


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """Hide what saving prints: the traceback TensorFlow prints before raising it, its INFO lines, and AutoGraph's
    notes on the gradient functions it traces (printed to stdout)."""
    logger = tf.get_logger()
    level = logger.level
    logger.setLevel(max(level, logging.WARNING))
    try:
        with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
            yield
    finally:
        logger.setLevel(level)


class SaveRefused(ValueError):
    """tf.saved_model.save refused the case; the message leads with the error that made it refuse."""


def _save_refusal(exc: Exception) -> Exception:
    """`exc`, or, when TensorFlow's message only points to a printed log, the cause it printed first."""
    cause = exc.__cause__
    if cause is None:
        return exc
    line = first_line(cause)
    named = line if line.startswith(f"{type(cause).__name__}:") else f"{type(cause).__name__}: {line}"
    return SaveRefused(f"{named}; tf.saved_model.save: {first_line(exc)}")


def _trace(case: Case) -> dict[str, Any]:
    """The case's forward, loss and grad_ys as traced tf.functions, and its variables: what one case saves."""
    variables = [tf.Variable(value) for value in case.variables]
    signature = [tf.TensorSpec(input_shape(value, case.downstream), tf.as_dtype(value.dtype)) for value in case.inputs]
    op = case.build()
    forward = tf.function(lambda *inputs: tuple(op(*inputs, *variables)), input_signature=signature, autograph=False)
    outputs = tf.nest.flatten(forward.get_concrete_function().structured_outputs)
    traced_variables = variables
    if case.extra_sources is not None:  # variables the forward created while traced: saved, and sources there
        with tf.GradientTape() as nothing_watched:
            pass
        created = [v for v in case.extra_sources(nothing_watched) if all(v is not w for w in variables)]
        traced_variables = [*variables, *created]
    downstream = case.downstream
    loss = tf.function(lambda *outputs: downstream.loss(*outputs),
                       input_signature=[tf.TensorSpec(o.shape, o.dtype) for o in outputs], autograph=False)
    target = loss.get_concrete_function().structured_outputs
    traced: dict[str, Any] = {"forward": forward, "loss": loss, "variables": traced_variables}
    if downstream.output_gradients is not None:
        output_gradients = downstream.output_gradients
        grad_ys = tf.function(lambda target: output_gradients(target),
                              input_signature=[tf.TensorSpec(target.shape, target.dtype)], autograph=False)
        grad_ys.get_concrete_function()
        traced["grad_ys"] = grad_ys
    return traced


def _outcome(found: dict[str, Any], sink: LoggedUpstreams) -> Ran | Failed:
    """The tape's outcome, its upstream log delivered to the probes; tf.gradients' disagreement as a note."""
    missing = {"error": {"type": "LoaderFailed", "kind": "python", "phase": "run",
                         "message": "the loading process returned no result for this mode"}, "log": []}
    tape, gradients = found.get("tape", missing), found.get("gradients", missing)
    sink.deliver(tape["log"])
    outcome = _mode_outcome(tape)
    note = loader_notes(outcome, _mode_outcome(gradients), sink.parse(tape["log"]), sink.parse(gradients["log"]))
    return dataclasses.replace(outcome, note=note)


def _mode_outcome(result: dict[str, Any]) -> Ran | Failed:
    if "error" in result:
        return Failed(error=_exception(result["error"]), phase=result["error"]["phase"])
    grads = tuple(None if text is None else loader.decode_array(text) for text in result["grads"])
    return Ran(input_grads=grads, input_grad_kinds=tuple(result["kinds"]))


def _exception(error: dict[str, Any]) -> BaseException:
    """The loader's exception as an object of the same class where one exists here (OpErrors, builtins)."""
    name, message = error["type"], error["message"]
    if error["kind"] == "tensorflow":
        cls = getattr(tf.errors, name, None)
        if isinstance(cls, type) and issubclass(cls, tf.errors.OpError):
            return cls(None, None, message)
    found = getattr(builtins, name, None)
    if isinstance(found, type) and issubclass(found, Exception):
        try:
            return found(message)
        except Exception:  # noqa: BLE001 - an exception class with another constructor
            pass
    return LoadedError(f"{name}: {message}")


class SavedModel(SavedModelContext):
    name = "saved_model"
    summary = "tf.saved_model.save (default options), loaded in a fresh process, eager tape there"


class SavedModelStripped(SavedModelContext):
    name = "saved_model_stripped"
    summary = "tf.saved_model.save(experimental_custom_gradients=False), loaded in a fresh process, eager tape"
    custom_gradients = False
    # not native (compat/registry.py): the option drops custom gradients by design: what it does is reported,
    # not a failure
