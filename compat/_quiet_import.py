"""Import TensorFlow with its C++ start-up chatter hidden, replayed if the import fails."""

from __future__ import annotations

import os
import sys
import tempfile


def import_tensorflow_hiding_chatter() -> None:
    """Import TensorFlow with the process's stderr (fd 2) sent to a temporary file: its oneDNN/CPU notices are
    printed from C++ whatever the log level. If the import fails, what it printed is replayed before the error."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as captured:
        os.dup2(captured.fileno(), 2)
        try:
            import tensorflow  # noqa: F401
        except BaseException:
            os.dup2(saved, 2)
            captured.seek(0)
            sys.stderr.write(captured.read().decode("utf-8", "replace"))
            raise
        finally:
            os.dup2(saved, 2)
            os.close(saved)
