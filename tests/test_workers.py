"""compat.workers: a check spread over worker processes gives the one-process report; a dying worker is cells."""

import json
import multiprocessing
import re
import textwrap

import pytest

from compat import workers as workers_module
from compat.apps._request import CheckRequest
from compat.checker import check
from compat.reports import render
from compat.reports.timings import without_timings
from compat.workers import check_in_workers


def test_two_workers_give_the_one_process_report():
    request = CheckRequest(specs=("sign_ste", "scaled_ste", "two_input_mul"), scenarios=("sum", "gather"))
    specs, scenarios = request()
    alone = check(specs, scenarios=scenarios)
    done = []
    spread = check_in_workers(request, jobs=2, progress=lambda step, total, label: done.append((step, total)))
    assert _comparable(json.loads(render(spread, "json"))) == _comparable(json.loads(render(alone, "json")))
    assert {cell.result.status for cell in spread.cells} >= {"ok", "not_called", "unsupported"}
    assert done[-1] == (3, 3)  # the progress callback saw every unit finish


_PER_PROCESS_NUMBERS = [
    (re.compile(r"(__inference[\w<>]*?)(?:_\d+)+\b"), r"\1_#"),  # a function TensorFlow traced
    (re.compile(r"\b(gc_\w+?)_\d+(?=\b|_grad\b)"), r"\1_#"),  # an op gradcompat built (numbered per spec)
    (re.compile(r"\b(\w+_layer)(?:_\d+)?\b"), r"\1"),  # a Keras layer: `op_layer`, then `op_layer_1`
]


def _comparable(document):
    """The report without timings, and with the numbers of names made per process masked in messages: TensorFlow's
    traced functions and Keras' layers, and gradcompat's ops (numbered per spec, but a process that built the spec
    before, as this test process did in other tests, is further on). TensorFlow 2.12's messages quote them."""
    def masked(value, key=None):
        if isinstance(value, dict):
            return {k: masked(v, k) for k, v in value.items()}
        if isinstance(value, list):
            return [masked(v, key) for v in value]
        if key in ("message", "detail") and isinstance(value, str):
            for pattern, replacement in _PER_PROCESS_NUMBERS:
                value = pattern.sub(replacement, value)
        return value

    return masked(without_timings(document))


def test_a_worker_that_dies_turns_its_spec_into_error_cells_and_the_others_still_run(tmp_path, monkeypatch):
    (tmp_path / "crashing.py").write_text(textwrap.dedent('''
        import ctypes, os
        import numpy as np
        import tensorflow as tf
        import compat

        def _exits(x):
            os._exit(7)

        def _segfaults(x):
            ctypes.string_at(0)

        X = [np.array([1.0, -2.0], np.float32)]
        GOOD = compat.GradientSpec("good", tf.sign, lambda i, o, u: [u[0]], X, op_type="Sign")
        EXITS = compat.GradientSpec("exits", _exits, lambda i, o, u: [u[0]], X)
        SEGFAULTS = compat.GradientSpec("segfaults", _segfaults, lambda i, o, u: [u[0]], X)
        LAST = compat.GradientSpec("last", tf.sign, lambda i, o, u: [2.0 * u[0]], X, op_type="Sign")
    '''))
    monkeypatch.chdir(tmp_path)
    names = ("crashing.py:EXITS", "crashing.py:GOOD", "crashing.py:SEGFAULTS", "crashing.py:LAST")
    report = check_in_workers(CheckRequest(specs=names, scenarios=("sum",)), jobs=2,
                              variants=["custom_gradient@eager_tape", "custom_gradient@v1_session"])
    by_spec = {}
    for cell in report.cells:
        by_spec.setdefault(cell.spec, []).append(cell)
    assert list(by_spec) == ["exits", "good", "segfaults", "last"]  # report order, whoever finished first
    assert all(cell.status == "error" and "exited with code 7" in cell.result.message for cell in by_spec["exits"])
    assert all(cell.status == "error" and "killed by SIGSEGV" in cell.result.message for cell in by_spec["segfaults"])
    assert all(cell.result.status == "ok" and cell.result.calls == 1 for cell in by_spec["good"] + by_spec["last"])
    assert report.exit_code == 1


def test_a_dying_worker_names_the_end_of_its_stderr_bounded_and_what_workers_print_is_shown(tmp_path, monkeypatch,
                                                                                              capfd):
    (tmp_path / "noisy.py").write_text(textwrap.dedent('''
        import os, sys
        import numpy as np
        import tensorflow as tf
        import compat

        def _dies(x):
            sys.stderr.write("y" * 2_000_000 + "\\nthe last words\\n")
            sys.stderr.flush()
            os._exit(7)

        def _prints(x):
            print("a user print from a worker", file=sys.stderr)
            return tf.sign(x)

        X = [np.array([1.0, -2.0], np.float32)]
        DIES = compat.GradientSpec("dies", _dies, lambda i, o, u: [u[0]], X)
        PRINTS = compat.GradientSpec("prints", _prints, lambda i, o, u: [u[0]], X, op_type="Sign")
    '''))
    monkeypatch.chdir(tmp_path)
    report = check_in_workers(CheckRequest(specs=("noisy.py:DIES", "noisy.py:PRINTS"), scenarios=("sum",)), jobs=2,
                              variants=["custom_gradient@eager_tape"])
    dies, prints = report.cells
    assert dies.status == "error" and "exited with code 7" in dies.result.message
    assert dies.result.message.endswith("; its stderr ended with: the last words")
    assert len(dies.result.message) < 1_000 and prints.result.status == "ok"
    shown = capfd.readouterr().err
    assert "a user print from a worker" in shown and "the last words" in shown


def test_ctrl_c_right_after_a_worker_starts_leaves_no_worker_behind(monkeypatch):
    """A Ctrl-C between a worker's start and the pool's bookkeeping once left that worker alive, and
    multiprocessing then joined it at exit while it waited for work: compat-check hung instead of exiting."""
    assign = workers_module._Pool._assign
    calls = []

    def interrupted_on_the_second_worker(self, worker, pending):
        calls.append(worker)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return assign(self, worker, pending)

    monkeypatch.setattr(workers_module._Pool, "_assign", interrupted_on_the_second_worker)
    try:
        with pytest.raises(KeyboardInterrupt):
            check_in_workers(CheckRequest(specs=("sign_ste", "scaled_ste"), scenarios=("sum",)), jobs=2)
        left = [p for p in multiprocessing.active_children() if p.name == "gradcompat-worker"]
        assert not left, f"workers still alive after Ctrl-C: {left}"
        assert all(not worker.process.is_alive() for worker in calls)
    finally:
        for process in multiprocessing.active_children():
            process.kill()
            process.join()
