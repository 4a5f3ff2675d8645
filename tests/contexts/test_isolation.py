"""The one failure-isolation helper: it finds exactly the failing cases and starts each attempt afresh."""

import ast
import collections
import dataclasses
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

import compat.contexts
from compat.contexts import CONTEXTS, Case
from compat.contexts.isolation import isolate
from compat.downstream import SUM
from tests.contexts.conftest import X, failing_at_run_time, square_op


def _attempts(keys, failing, variant=lambda key: ""):
    """Run `isolate` over `keys` where a batch fails when it holds a key of `failing`: its outcomes, each key's
    attempts, and each key's before_run calls (recorded in order with the attempts)."""
    attempts, events = collections.Counter(), []

    def attempt(batch):
        assert all(events.count(("before", key)) == attempts[key] + 1 for key in batch)  # before_run came first
        attempts.update(batch)
        if failing & set(batch):
            return ({}, batch) if len(batch) > 1 else ({batch[0]: "failed"}, [])
        return dict.fromkeys(batch, "ran"), []

    outcomes = isolate(keys, attempt, lambda key: events.append(("before", key)), variant)
    return outcomes, attempts, collections.Counter(key for _, key in events)


@pytest.mark.parametrize("failing", [set(), {0}, {5}, {2, 3}, set(range(8))])
def test_finds_exactly_the_failing_cases_and_calls_before_run_once_per_attempt(failing):
    outcomes, attempts, before_runs = _attempts(list(range(8)), failing)
    assert outcomes == {key: "failed" if key in failing else "ran" for key in range(8)}
    assert before_runs == attempts
    if not failing:
        assert set(attempts.values()) == {1}  # one batch, one attempt


def test_failed_cases_are_split_by_variant_first():
    outcomes, attempts, _ = _attempts(list(range(6)), {1}, variant=lambda key: "ab"[key % 2])
    assert outcomes[1] == "failed" and all(outcomes[key] == "ran" for key in (0, 2, 3, 4, 5))
    assert all(attempts[key] == 2 for key in (0, 2, 4))  # variant `a` ran again once, as one batch, and passed


def test_no_cases_attempt_nothing():
    assert isolate([], lambda batch: pytest.fail("attempted an empty batch")) == {}


@dataclasses.dataclass
class _Counter:
    calls: int = 0

    def __call__(self):
        self.calls += 1


@pytest.mark.parametrize("context", ["v1_session", "v1_tape", "function_tape", "function_gradients", "keras_fit"])
def test_each_batch_context_isolates_through_the_helper(context):
    """The run-time failure is found and each case's before_run is called once per attempt the helper makes."""
    builds = [square_op, failing_at_run_time, square_op, square_op]
    counters = [_Counter() for _ in builds]
    cases = [Case(build, (X,), SUM, before_run=counter) for build, counter in zip(builds, counters, strict=True)]
    outcomes = CONTEXTS[context].run(cases)
    assert isinstance(outcomes[1].error, tf.errors.InvalidArgumentError) and outcomes[1].phase == "run"
    for index in (0, 2, 3):
        np.testing.assert_array_equal(outcomes[index].input_grads[0], 2 * X)
    _, attempts, _ = _attempts(list(range(4)), {1})
    assert [counter.calls for counter in counters] == [attempts[index] for index in range(4)]


def _calls_of(path: Path, name: str) -> list[int]:
    return [node.lineno for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == name]


def test_no_context_calls_before_run_itself():
    """Only the helper starts an attempt (the distributed contexts, which run each case apart in workers or on
    replicas, are moving to compat/distribute/)."""
    root = Path(compat.contexts.__file__).parent
    exempt = {"isolation.py", "mirrored.py", "multi_worker.py"}
    callers = {path.name: _calls_of(path, "before_run") for path in root.glob("*.py") if path.name not in exempt}
    assert {name: lines for name, lines in callers.items() if lines} == {}
