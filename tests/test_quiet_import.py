"""TensorFlow's C++ start-up chatter is hidden during the import, and replayed when the import fails."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _python(code, **env):
    environ = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"} | env
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=environ,
                          timeout=300)


def test_the_import_prints_nothing_to_stderr():
    loud = _python("import tensorflow")
    quiet = _python("from compat._quiet_import import import_tensorflow_hiding_chatter as f; f(); print('ok')")
    assert quiet.returncode == 0 and quiet.stdout == "ok\n"
    assert "oneDNN" in loud.stderr and quiet.stderr == ""


def test_a_failing_import_replays_what_it_printed(tmp_path):
    (tmp_path / "tensorflow.py").write_text("import os\nos.write(2, b'chatter before failing\\n')\n"
                                            "raise ImportError('x')\n")
    done = _python("from compat._quiet_import import import_tensorflow_hiding_chatter as f; f()",
                   PYTHONPATH=f"{tmp_path}{os.pathsep}{ROOT}")
    assert done.returncode == 1
    assert done.stderr.index("chatter before failing") < done.stderr.index("ImportError: x")
