"""The execution-context registry: name -> where and how gradients are requested."""

from __future__ import annotations

from compat.contexts.base import Case, Context, Outcome
from compat.contexts.eager import EagerTape
from compat.contexts.forward_mode import ForwardAccumulatorContext
from compat.contexts.function import FunctionGradients, FunctionTape
from compat.contexts.graph_session import V1Session, V1Tape
from compat.contexts.jacobian import JacobianLoop, JacobianPfor
from compat.contexts.keras_fit import KerasFit
from compat.contexts.mirrored import MirroredTape, MirroredV1
from compat.contexts.mixed_precision import MixedPrecision
from compat.contexts.multi_worker import MultiWorker
from compat.contexts.recompute import RecomputeGrad, VectorizedMap
from compat.contexts.saved_model import SavedModel, SavedModelStripped
from compat.contexts.wrapped import OuterTape, WrapFunction
from compat.contexts.xla import XlaGradients, XlaTape

ALL_CONTEXTS: dict[str, Context] = {
    context.name: context
    for context in (V1Session(), V1Tape(), EagerTape(), FunctionTape(), FunctionGradients(), OuterTape(),
                    WrapFunction(), XlaTape(), XlaGradients(), MixedPrecision(), KerasFit(), SavedModel(),
                    SavedModelStripped(), JacobianLoop(), JacobianPfor(), ForwardAccumulatorContext(), RecomputeGrad(),
                    VectorizedMap(), MirroredTape(), MirroredV1(), MultiWorker())
}
"""Every context, the opt-in ones (distributed, Jacobians, forward mode) included."""

CONTEXTS: dict[str, Context] = {name: context for name, context in ALL_CONTEXTS.items() if not context.opt_in}
"""The default contexts (every variant in `compat.VARIANTS`); the opt-in ones run only when named."""

__all__ = ["ALL_CONTEXTS", "CONTEXTS", "Case", "Context", "Outcome"]
