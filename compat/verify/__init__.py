"""Proof of equivalence: run an original TF1 module and its TF2 rewrite on the same inputs and compare.

`verify_rewrite(original_path, rewritten_source)` imports the original as legacy code expects (`tensorflow` is
`tensorflow.compat.v1`, v2 behaviour disabled, a v1 Session) and the rewrite in TF2 (eager tape, tf.function
tape, v1 Session), each (entry, context) in a process of its own, runs every applicable engine scenario on each
entry point in a fresh graph, and compares forward outputs, the gradients of inputs and variables and, where the
gradient functions can be instrumented, the upstreams they receive. It imports and runs your code: use it on
code you trust. Importing this package imports neither TensorFlow nor user code.

Command line: `compat-verify ORIGINAL.py REWRITTEN.py [--entries=name:float32[3];...]` (compat/apps/verify.py).
"""

from compat.verify._entries import (
    ENTRIES_CONSTANT,
    Constant,
    Entries,
    EntriesError,
    example_inputs,
    parse_entries,
    read_entries,
)
from compat.verify._module_files import ModuleFileError
from compat.verify._report import VERIFY_STATUSES, UpstreamStatus, VerifyCell, VerifyReport, VerifyStatus
from compat.verify._runner import CONTEXTS, DEFAULT_CONTEXTS, VERIFY_HELP, verify_files, verify_rewrite

__all__ = [
    "CONTEXTS",
    "Constant",
    "DEFAULT_CONTEXTS",
    "ENTRIES_CONSTANT",
    "Entries",
    "EntriesError",
    "ModuleFileError",
    "UpstreamStatus",
    "VERIFY_HELP",
    "VERIFY_STATUSES",
    "VerifyCell",
    "VerifyReport",
    "VerifyStatus",
    "example_inputs",
    "parse_entries",
    "read_entries",
    "verify_files",
    "verify_rewrite",
]
