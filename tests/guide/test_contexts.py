"""The guide's section on further contexts: a verdict table per context and mechanism, and sentences that say
only what the run shows."""

import pytest

from compat.checker import check
from tools.guide import contexts
from tools.guide.run import straight_through


@pytest.fixture(name="report", scope="module")
def report_fixture():
    return check([straight_through()], scenarios=["scaled", "stop_gradient"],
                 variants=["defun_grad_func@v1_session", "*@outer_tape", "*@xla_tape",
                           "custom_gradient@mixed_precision", "custom_gradient@keras_fit"])


def test_only_the_contexts_beyond_the_classic_five_get_rows(report):
    assert contexts.later_contexts(report) == ["outer_tape", "xla_tape", "mixed_precision", "keras_fit"]
    lines = contexts.contexts_table(report).splitlines()
    release = ".".join(report.tensorflow.split(".")[:2])
    assert lines[0] == f"| context | mechanism | verdicts over the 2 scenarios (TensorFlow {release}) |"
    assert "| `outer_tape` | RegisterGradient | 1 other form, 1 not called |" in lines
    assert "| `xla_tape` | Defun grad_func | 2 not observable |" in lines
    assert "| `outer_tape` | tf.custom_gradient | 1 other form, 1 not called |" in lines


def test_facts_separate_never_called_from_not_observable_and_give_the_loss_scale(report):
    facts = contexts.contexts_facts(report)
    assert "Under `outer_tape`, Defun grad_func is never called." in facts
    xla = next(s for s in facts.split("Under ") if s.startswith("`xla_tape`"))
    assert "Defun python_grad_func and RegisterGradient are never called" in xla
    assert "Defun grad_func receives cannot be captured (`not observable`" in xla
    assert "receives its upstream as float16, multiplied by the loss scale 16384" in facts
    assert ("Under `keras_fit`, for `scaled`, `tf.custom_gradient` receives its upstream multiplied by 0.25, the 1 / "
            "batch size") in facts and "divided by it, the values agree with the reference" in facts
