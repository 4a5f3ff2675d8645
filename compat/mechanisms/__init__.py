"""The mechanism registry: name -> object that builds a spec's op the way that pattern is written."""

from __future__ import annotations

from compat.mechanisms.base import BuiltOp, Mechanism, unique_name
from compat.mechanisms.custom_gradient import CustomGradient
from compat.mechanisms.defun_grad_func import DefunGradFunc
from compat.mechanisms.defun_python_grad_func import DefunPythonGradFunc
from compat.mechanisms.override_map import OverrideMap

MECHANISMS: dict[str, Mechanism] = {
    mechanism.name: mechanism
    for mechanism in (DefunGradFunc(), DefunPythonGradFunc(), OverrideMap(), CustomGradient())
}

__all__ = ["MECHANISMS", "BuiltOp", "Mechanism", "unique_name"]
