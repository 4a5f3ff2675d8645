"""compat._exit_guard: os._exit from user code raises in the guarding process; a forked child still exits."""

import os

import pytest

from compat._exit_guard import ExitCalled, exits_raised


def test_os_exit_raises_inside_the_block_and_is_itself_again_after_it():
    real = os._exit
    with exits_raised():
        with pytest.raises(ExitCalled) as caught:
            os._exit(5)
        not_caught_by_except_exception = True
        try:
            os._exit(0)
        except Exception:  # noqa: BLE001 - what a user's catch-all would do
            not_caught_by_except_exception = False
        except ExitCalled:
            pass
    assert caught.value.code == 5 and str(caught.value).startswith("os._exit(5) (user code called os._exit")
    assert not_caught_by_except_exception and os._exit is real


def test_a_child_forked_inside_the_block_exits_for_real():
    with exits_raised():
        pid = os.fork()
        if pid == 0:
            os._exit(7)  # the child must end here, not raise into a copy of the test run
        _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 7
