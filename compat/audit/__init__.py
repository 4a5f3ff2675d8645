"""Static audit of TF1 custom-gradient patterns (Defun, RegisterGradient, gradient_override_map); no TF import."""

from compat.audit.engine import AuditReport, audit_file, audit_paths
from compat.audit.findings import FileResult, Finding, Severity, Site
from compat.audit.formats import FORMATS, render
from compat.audit.rules import RULES, Rule

__all__ = [
    "FORMATS",
    "RULES",
    "AuditReport",
    "FileResult",
    "Finding",
    "Rule",
    "Severity",
    "Site",
    "audit_file",
    "audit_paths",
    "render",
]
