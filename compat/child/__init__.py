"""One toolkit for child processes: session, deadline, group kill, stderr tail, exit words, exceptions."""

from compat.child.exits import describe_exit, exit_code, signal_name
from compat.child.fork import fork_call
from compat.child.session import (
    child_env,
    die_with_parent,
    kill_group,
    killed_on_exit,
    package_root,
    start,
    wait_until,
)
from compat.child.stderr_tail import fatal_or_tail, stderr_tail
from compat.child.transport import RaisedInChild, exception_line

__all__ = ["RaisedInChild", "child_env", "describe_exit", "die_with_parent", "exception_line", "exit_code",
           "fatal_or_tail", "fork_call", "kill_group", "killed_on_exit", "package_root", "signal_name", "start",
           "stderr_tail", "wait_until"]
