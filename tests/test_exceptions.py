"""compat.exceptions: the one way gradcompat describes an exception (no TensorFlow needed)."""

from __future__ import annotations

from compat._exit_guard import ExitCalled
from compat.exceptions import MESSAGE_LIMIT, describe_exception, first_line, tensorflow_message


def test_an_exception_is_described_by_its_type_and_message():
    assert describe_exception(ValueError("bad shape")) == "ValueError: bad shape"


def test_an_exit_user_code_asked_for_is_named_as_such():
    assert describe_exception(SystemExit(3)) == "SystemExit(3) (user code called sys.exit)"
    assert describe_exception(ExitCalled(0)) == str(ExitCalled(0))
    assert "os._exit(0)" in describe_exception(ExitCalled(0))


def test_an_error_autograph_wrapped_in_a_keras_train_step_is_reported_by_its_last_line():
    wrapped = ValueError('in user code:\n\n    File "training.py", line 1284, in train_function  *\n'
                         '        return step_function(self, iterator)\n\n    ValueError: my gradient is broken\n')
    assert tensorflow_message(wrapped) == "ValueError: my gradient is broken"
    assert tensorflow_message(TypeError("in user code:\n\n    LookupError: No gradient defined")) == (
        "TypeError: LookupError: No gradient defined")


def test_tensorflows_message_leaves_out_the_python_stack_and_node_defs_it_embeds():
    error = RuntimeError('Graph execution error:\n\nDetected at node foo defined at:\n  File "x.py", line 3, in f\n'
                         '    y = tf.lgamma(x)\nNode: \'Lgamma\'\nop: "Lgamma"\nattr {\n}\n'
                         'No registered kernel\n[[{{node Lgamma}}]]')
    assert tensorflow_message(error) == "RuntimeError: Graph execution error: No registered kernel"


def test_tensorflows_message_is_cut_at_the_limit():
    message = tensorflow_message(ValueError("x" * (2 * MESSAGE_LIMIT)))
    assert message == f"ValueError: {'x' * (MESSAGE_LIMIT - 3)}..."


def test_an_empty_message_is_described_by_the_exception_repr():
    assert tensorflow_message(KeyError()) == "KeyError: KeyError()"


def test_first_line_is_the_message_first_line_or_autographs_last():
    assert first_line(ValueError("\n  first  \nsecond")) == "first"
    assert first_line(ValueError("in user code:\n\n  File ...\n  TypeError: wrong")) == "TypeError: wrong"
    assert first_line(ValueError("y" * 300), limit=200) == "y" * 200
    assert first_line(ValueError()) == ""
