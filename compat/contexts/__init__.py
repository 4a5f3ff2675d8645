"""The execution-context registry: name -> where and how gradients are requested."""

from __future__ import annotations

from compat.contexts.base import Case, Context, Outcome
from compat.contexts.eager import EagerTape
from compat.contexts.function import FunctionGradients, FunctionTape
from compat.contexts.graph_session import V1Session, V1Tape
from compat.contexts.keras_fit import KerasFit
from compat.contexts.mixed_precision import MixedPrecision
from compat.contexts.wrapped import OuterTape, WrapFunction
from compat.contexts.xla import XlaGradients, XlaTape

CONTEXTS: dict[str, Context] = {
    context.name: context
    for context in (V1Session(), V1Tape(), EagerTape(), FunctionTape(), FunctionGradients(), OuterTape(),
                    WrapFunction(), XlaTape(), XlaGradients(), MixedPrecision(), KerasFit())
}

__all__ = ["CONTEXTS", "Case", "Context", "Outcome"]
