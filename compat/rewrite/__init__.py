"""Rewrite legacy TF1 custom gradients (Defun, RegisterGradient, gradient_override_map) as tf.custom_gradient."""

from compat.rewrite.engine import rewrite_source
from compat.rewrite.files import rewrite_file, rewrite_paths
from compat.rewrite.result import PATTERNS, STATUSES, FileResult, Site, SourceResult

__all__ = [
    "PATTERNS",
    "STATUSES",
    "FileResult",
    "Site",
    "SourceResult",
    "rewrite_file",
    "rewrite_paths",
    "rewrite_source",
]
