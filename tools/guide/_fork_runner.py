"""Child process for tools.guide.blocks: import TensorFlow once, then fork once per block.

Reads a JSON list of code strings on stdin, writes a JSON list of {stdout, exception} on stdout. Each block
runs in its own forked process (fresh gradient registry, eager mode, namespace), created before TensorFlow
ran any op, so the fork holds no live runtime state.
"""

import functools
import json
import os
import sys
import tempfile

import tensorflow  # noqa: F401  (imported before forking: the point of this runner)

from compat.child import describe_exit, exception_line, fork_call


def _block(code: str, out_path: str) -> None:
    """In the forked process: run the block, its stdout to `out_path`, its exception's line to `out_path`.exc."""
    with open(out_path, "w", encoding="utf-8") as out:
        os.dup2(out.fileno(), 1)
        sys.stdout = open(1, "w", encoding="utf-8", closefd=False)  # noqa: SIM115
        exception = None
        try:
            exec(compile(code, "<guide block>", "exec"), {"__name__": "__main__"})  # noqa: S102
        except BaseException as exc:  # noqa: BLE001  (the block's failure is its result)
            exception = exception_line(exc)
        sys.stdout.flush()
    with open(out_path + ".exc", "w", encoding="utf-8") as err:
        err.write(exception or "")


def main() -> None:
    codes = json.loads(sys.stdin.read())
    results = []
    with tempfile.TemporaryDirectory() as workdir:
        os.chdir(workdir)
        for index, code in enumerate(codes):
            out_path = os.path.join(workdir, f"block{index}.out")
            exit_code = fork_call(functools.partial(_block, code, out_path))
            with open(out_path, encoding="utf-8") as out:
                stdout = out.read()
            try:
                with open(out_path + ".exc", encoding="utf-8") as err:
                    exception = err.read() or None
            except FileNotFoundError:
                exception = f"the block's process {describe_exit(exit_code)}"
            results.append({"stdout": stdout, "exception": exception})
    sys.stdout.write(json.dumps(results))


if __name__ == "__main__":
    main()
