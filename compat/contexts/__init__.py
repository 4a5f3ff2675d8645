"""The execution-context registry: name -> where and how gradients are requested."""

from __future__ import annotations

import importlib
from collections.abc import Iterator, MutableMapping

from compat.contexts.base import Case, Context, Crashed, Failed, Outcome, Ran, Refused, cannot_run
from compat.contexts.eager import EagerTape
from compat.contexts.forward_mode import ForwardAccumulatorContext
from compat.contexts.function import FunctionGradients, FunctionTape
from compat.contexts.graph_session import V1Session, V1Tape
from compat.contexts.jacobian import JacobianLoop, JacobianPfor
from compat.contexts.keras_fit import KerasFit
from compat.contexts.mixed_precision import MixedPrecision
from compat.contexts.recompute import RecomputeGrad, VectorizedMap
from compat.contexts.saved_model import SavedModel, SavedModelStripped
from compat.contexts.wrapped import OuterTape, WrapFunction
from compat.contexts.xla import XlaGradients, XlaTape
from compat.registry import ALL_CONTEXT_NAMES, CONTEXT_INFO, CONTEXT_NAMES


class _Contexts(MutableMapping[str, Context]):
    """Every registered context by name, in registry order; one defined outside this package (the distributed
    ones, in `compat.distribute`, which extends this package and is never imported by it) loads from its
    registered implementation when first looked up."""

    def __init__(self, defined: tuple[Context, ...]) -> None:
        self._loaded: dict[str, Context] = {context.name: context for context in defined}

    def __getitem__(self, name: str) -> Context:
        if name not in self._loaded:
            if name not in CONTEXT_INFO:
                raise KeyError(name)
            module, _, class_name = CONTEXT_INFO[name].implementation.partition(":")
            self._loaded[name] = getattr(importlib.import_module(module), class_name)()
        return self._loaded[name]

    def __setitem__(self, name: str, context: Context) -> None:
        self._loaded[name] = context

    def __delitem__(self, name: str) -> None:
        del self._loaded[name]

    def __iter__(self) -> Iterator[str]:
        return iter([*ALL_CONTEXT_NAMES, *(name for name in self._loaded if name not in CONTEXT_INFO)])

    def __len__(self) -> int:
        return len(set(ALL_CONTEXT_NAMES) | set(self._loaded))


ALL_CONTEXTS: MutableMapping[str, Context] = _Contexts(
    (V1Session(), V1Tape(), EagerTape(), FunctionTape(), FunctionGradients(), OuterTape(), WrapFunction(), XlaTape(),
     XlaGradients(), MixedPrecision(), KerasFit(), SavedModel(), SavedModelStripped(), JacobianLoop(), JacobianPfor(),
     ForwardAccumulatorContext(), RecomputeGrad(), VectorizedMap()))
"""Every context, the opt-in ones (distributed, Jacobians, forward mode) included."""

CONTEXTS: dict[str, Context] = {name: ALL_CONTEXTS[name] for name in CONTEXT_NAMES}
"""The default contexts (every variant in `compat.VARIANTS`); the opt-in ones run only when named."""

__all__ = ["ALL_CONTEXTS", "CONTEXTS", "Case", "Context", "Crashed", "Failed", "Outcome", "Ran", "Refused",
           "cannot_run"]
