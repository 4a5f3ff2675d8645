"""Child process for compat.guide.blocks: import TensorFlow once, then fork once per block.

Reads a JSON list of code strings on stdin, writes a JSON list of {stdout, exception} on stdout. Each block
runs in its own forked process (fresh gradient registry, eager mode, namespace), created before TensorFlow
ran any op, so the fork holds no live runtime state.
"""

import json
import os
import sys
import tempfile
import traceback

import tensorflow  # noqa: F401  (imported before forking: the point of this runner)


def _child(code: str, out_path: str) -> None:
    with open(out_path, "w", encoding="utf-8") as out:
        os.dup2(out.fileno(), 1)
        sys.stdout = open(1, "w", encoding="utf-8", closefd=False)  # noqa: SIM115
        exception = None
        try:
            exec(compile(code, "<guide block>", "exec"), {"__name__": "__main__"})  # noqa: S102
        except BaseException as exc:  # noqa: BLE001  (the block's failure is its result)
            exception = "".join(traceback.format_exception_only(exc)).strip().splitlines()[-1]
        sys.stdout.flush()
    with open(out_path + ".exc", "w", encoding="utf-8") as err:
        err.write(exception or "")
    os._exit(0)


def main() -> None:
    codes = json.loads(sys.stdin.read())
    results = []
    with tempfile.TemporaryDirectory() as workdir:
        os.chdir(workdir)
        for index, code in enumerate(codes):
            out_path = os.path.join(workdir, f"block{index}.out")
            pid = os.fork()
            if pid == 0:
                _child(code, out_path)
            _, status = os.waitpid(pid, 0)
            with open(out_path, encoding="utf-8") as out:
                stdout = out.read()
            try:
                with open(out_path + ".exc", encoding="utf-8") as err:
                    exception = err.read() or None
            except FileNotFoundError:
                exception = f"the block's process died (wait status {status})"
            results.append({"stdout": stdout, "exception": exception})
    sys.stdout.write(json.dumps(results))


if __name__ == "__main__":
    main()
