"""Guide blocks run each in a fresh process: what they print, what they raise, and no state shared."""

from tools.guide.blocks import run_blocks


def test_blocks_report_output_and_exceptions_and_share_no_registry():
    register = ("import tensorflow as tf\n@tf.RegisterGradient('GuideTwice')\ndef g(op, grad):\n    return grad\n"
                "print('ok')\n")
    runs = run_blocks([register, register, "print('before')\nraise ValueError('how to fix: x')\n"])
    assert [run.text() for run in runs[:2]] == ["ok", "ok"]  # registering twice would raise in one process
    assert runs[2].stdout == "before\n"
    assert runs[2].text() == "before\nTraceback (most recent call last): ... ValueError: how to fix: x"
