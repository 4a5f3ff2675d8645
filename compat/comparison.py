"""Compare a variant's result with a reference and classify every difference: the comparison library."""

from __future__ import annotations

import dataclasses
import re
import typing
from collections.abc import Sequence
from typing import Literal, TypeGuard, cast

import numpy as np

from compat.dtypes import tolerance_for
from compat.results import Upstream, VariantResult

DifferenceKind = Literal["none_vs_zeros", "sparse_vs_dense", "static_shape", "shape", "dtype", "values", "count",
                         "calls", "contract", "not_called", "unsupported", "error", "not_observable",
                         "compute_dtype", "zero_calls", "zeros_shape"]
CellStatus = Literal["same", "differs", "not_called", "unsupported", "error", "not_observable"]

DEFAULT_REFERENCE = "defun_grad_func@v1_session"
"""The variant cells are compared with unless another is chosen: the legacy mechanism, used as documented."""

REPRESENTATION_KINDS: frozenset[str] = frozenset({"none_vs_zeros", "sparse_vs_dense", "static_shape", "compute_dtype",
                                                  "zero_calls", "zeros_shape"})
"""Differences in how the same values are handed over: None for zeros, IndexedSlices for a dense tensor, a
static shape known in one variant and not in the other (unknown rank inside a Defun body; code that
branches on `dy.shape` takes another path there), float16 under a mixed-precision policy, or extra calls
that receive only zero upstreams (TensorFlow differentiating a backward function again for second order), or
zeros of another shape for an integer output (which has no gradient; a loaded SavedModel hands over [1, n]).
They break a gradient function only if it cannot take that form (it then shows as an `error` cell) or has
side effects (an extra call runs them again); the values the model learns from are compared apart."""


Aspect = Literal["status", "gradient", "calls", "upstreams", "upstream", "input_grads", "input_grad", "outputs",
                 "output", "variable_grad"]
"""What a difference is about: the cell's status, the gradient TensorFlow accepted (its contract), the number of
calls, of upstreams or of gradients (the plural), one upstream, one input gradient, one output (verify's forward),
or one variable's gradient."""


@dataclasses.dataclass(frozen=True)
class Part:
    """The part of a distributed cell a difference is in: one replica's run on its shard, or the reduced gradients."""

    replica: int | None
    """The replica (`replica_id_in_sync_group`), or None for the gradients reduced over the replicas."""
    rows: tuple[int, ...] = ()
    """The batch rows of the replica's shard."""
    global_batch: bool = False
    """Whether the loss was divided by the global batch size (as `tf.nn.compute_average_loss` does)."""

    def __str__(self) -> str:
        scaling = " 1/global_batch" if self.global_batch else ""
        if self.replica is None:
            return f"reduced{scaling}"
        return f"replica[{self.replica}] rows {list(self.rows)}{scaling}"


@dataclasses.dataclass(frozen=True)
class Location:
    """Where in a cell a difference is: its aspect, which one (`position`), in which call, in which part."""

    aspect: Aspect
    position: int | str | None = None
    """The upstream's or input gradient's index, or the variable's name; None for a count or the status."""
    call: int = 0
    """The call of the gradient function whose upstream differs (0 for the first, and for anything but upstreams)."""
    part: Part | None = None

    def __str__(self) -> str:
        text = self.aspect if self.position is None else f"{self.aspect}[{self.position}]"
        text = f"call[{self.call}] {text}" if self.call else text
        return f"{self.part} {text}" if self.part is not None else text

    @classmethod
    def parse(cls, text: str) -> Location:
        """The location `str()` wrote as `text` (a JSON report's `where`); ValueError if it is not one."""
        found = _LOCATION.fullmatch(text)
        if found is None or found["aspect"] not in typing.get_args(Aspect):
            raise ValueError(f"{text!r} is not a difference's location (e.g. `upstream[0]`, `call[1] upstream[0]`, "
                             f"`replica[0] rows [0, 1] input_grad[0]`)")
        part = None
        if found["reduced"] or found["replica"]:
            rows = tuple(int(row) for row in found["rows"].split(",")) if found["rows"] else ()
            part = Part(None if found["reduced"] else int(found["replica"]), rows, bool(found["global_batch"]))
        position = found["position"]
        return cls(cast(Aspect, found["aspect"]), int(position) if position and position.isdigit() else position,
                   int(found["call"] or 0), part)


_LOCATION = re.compile(r"(?:(?:(?P<reduced>reduced)|replica\[(?P<replica>\d+)\] rows \[(?P<rows>[\d, ]*)\])"
                       r"(?P<global_batch> 1/global_batch)? )?(?:call\[(?P<call>\d+)\] )?(?P<aspect>[a-z_]+)"
                       r"(?:\[(?P<position>.*)\])?")
STATUS = Location("status")


@dataclasses.dataclass(frozen=True)
class Difference:
    """One way a variant differs from the reference, and where (`location`; `where` is its text)."""

    kind: DifferenceKind
    location: Location
    detail: str
    max_abs: float | None = None
    max_rel: float | None = None
    index: tuple[int, ...] | None = None
    """The first element whose values differ."""

    @property
    def where(self) -> str:
        return str(self.location)

    @property
    def breaking(self) -> bool:
        """Whether it can change what a model learns (anything but a representation difference)."""
        return self.kind not in REPRESENTATION_KINDS and self.kind != "not_observable"  # unknown, not changed

    def as_dict(self) -> dict[str, object]:
        return {"kind": self.kind, "detail": f"{self.where}: {self.detail}"}


def cell_status(result: VariantResult, differences: Sequence[Difference]) -> CellStatus:
    if result.status != "ok":
        return result.status
    return "differs" if differences else "same"


def compare(result: VariantResult, reference: VariantResult) -> tuple[Difference, ...]:
    """Every difference between `result` and `reference`: status, contract, every call's upstreams (a
    different number of calls or of upstreams is a difference too), and the input gradients."""
    differences: list[Difference] = []
    if result.status != reference.status:
        kind = cast(DifferenceKind, result.status if result.status != "ok" else reference.status)
        differences.append(Difference(kind, STATUS, f"{result.status} here, {reference.status} in the reference"
                                      + (f" ({result.message})" if result.message else "")))
    differences += [Difference("contract", Location("gradient"), f"TensorFlow {_verb(result)} a gradient that "
                                                                 f"breaks the contract: {problem}")
                    for problem in result.violations]
    if result.calls and reference.calls:
        if result.calls != reference.calls:
            differences.append(_calls_difference(result, reference))
        for call, (mine, theirs) in enumerate(zip(result.upstreams, reference.upstreams, strict=False)):
            if len(mine) != len(theirs):
                differences.append(Difference("count", Location("upstreams", call=call),
                                              f"{len(mine)} upstreams here, {len(theirs)} in the reference"))
            for index, (upstream, other) in enumerate(zip(mine, theirs, strict=False)):
                differences += compare_upstream(Location("upstream", index, call), upstream, other,
                                                 mixed=result.compute_dtype == "float16")
    if result.input_grads and reference.input_grads:
        differences += _compare_input_grads(result, reference)
    return tuple(differences)


def _calls_difference(result: VariantResult, reference: VariantResult) -> Difference:
    """A different number of calls: `zero_calls` when the calls beyond the common ones received only zero
    (or None) upstreams, so the gradient values cannot differ through them; `calls` otherwise."""
    detail = f"called {result.calls}x here, {reference.calls}x in the reference"
    longer = result if result.calls > reference.calls else reference
    extra = longer.upstreams[min(result.calls, reference.calls):]
    if extra and all(_all_zero(call) for call in extra):
        where = "here" if longer is result else "in the reference"
        return Difference("zero_calls", Location("calls"), f"{detail}; the extra call(s) {where} received only zero "
                          "upstreams (TensorFlow differentiating the backward function again): the values are "
                          "unchanged, but side effects in the gradient function (counters, assignments, logging) "
                          "run again")
    return Difference("calls", Location("calls"), detail)


def _all_zero(call: Sequence[Upstream]) -> bool:
    return all(upstream.value is None or not np.any(upstream.value) for upstream in call)


def _verb(result: VariantResult) -> str:
    return "accepted" if result.status == "ok" else "was handed"


def _compare_input_grads(result: VariantResult, reference: VariantResult) -> list[Difference]:
    differences: list[Difference] = []
    if len(result.input_grads) != len(reference.input_grads):
        differences.append(Difference("count", Location("input_grads"), f"{len(result.input_grads)} input "
                                      f"gradients here, {len(reference.input_grads)} in the reference"))
    for index, (mine, theirs) in enumerate(zip(result.input_grads, reference.input_grads, strict=False)):
        where = Location("input_grad", index)
        kinds = {_kind(result, index), _kind(reference, index)}
        if kinds == {"dense", "indexed_slices"}:
            differences.append(Difference("sparse_vs_dense", where, f"{_kind(result, index)} here, "
                                                                    f"{_kind(reference, index)} in the reference"))
        if result.compute_dtype == "float16" and mine is not None and theirs is not None and theirs.dtype.kind == "f":
            # computed in float16 under a mixed-precision policy: compared at float16's precision
            mine, theirs = mine.astype(np.float16), theirs.astype(np.float16)
        differences += compare_arrays(where, mine, theirs)
    return differences


def _kind(result: VariantResult, index: int) -> str | None:
    return result.input_grad_kinds[index] if index < len(result.input_grad_kinds) else None


def compare_upstream(where: Location, mine: Upstream, theirs: Upstream, mixed: bool = False) -> list[Difference]:
    """`mixed`: `mine` arrived under a mixed-precision policy (float16, loss-scaled, stored unscaled): a float16
    where the reference has another float dtype is what the policy does (`compute_dtype`), and the values are
    compared at float16's tolerance."""
    try:
        shape = mine.known_shape or theirs.known_shape or _covering_shape(mine, theirs)
        mine_dense, theirs_dense = mine.to_dense(shape), theirs.to_dense(shape)
    except IndexError:
        return [Difference("shape", where, f"{mine.describe()} here, {theirs.describe()} in the reference: the "
                                           f"slices' indices fall outside the other side's dense shape")]
    if mine.kind == "none" or theirs.kind == "none":
        if mine.kind == theirs.kind:
            return []
        dense = mine_dense if theirs.kind == "none" else theirs_dense
        if dense is not None and not np.any(dense.astype(np.float64)):
            side = "here" if mine.kind == "none" else "in the reference"
            return [Difference("none_vs_zeros", where, f"None {side}, zeros of shape {list(dense.shape)} "
                                                       f"on the other side")]
        return [Difference("values", where, f"{mine.describe()} here, {theirs.describe()} in the reference")]
    differences: list[Difference] = []
    if mine.kind != theirs.kind:
        differences.append(Difference("sparse_vs_dense", where, f"{mine.describe()} here, {theirs.describe()} "
                                                                f"in the reference"))
    as_policy = mixed and mine.dtype == "float16" and theirs.dtype in ("float32", "float64")
    if mine.dtype != theirs.dtype:
        kind: DifferenceKind = "compute_dtype" if as_policy else "dtype"
        differences.append(Difference(kind, where, f"{mine.dtype} here, {theirs.dtype} in the reference"))
    if mine.kind == theirs.kind and mine.static_shape != theirs.static_shape:
        seen = (f"static shape {_shape_text(mine.static_shape)} here, {_shape_text(theirs.static_shape)} in the "
                "reference")
        if (mine.static_shape is not None and theirs.static_shape is not None
                and not _compatible(mine.static_shape, theirs.static_shape)):
            differences.append(Difference("shape", where, seen))
        else:
            differences.append(Difference("static_shape", where, f"{seen}: code that reads dy.shape while "
                                                                 f"building sees less in one of them"))
    if _integer_zeros(mine_dense) and _integer_zeros(theirs_dense) and mine_dense.shape != theirs_dense.shape:
        differences.append(Difference("zeros_shape", where, f"zeros of shape {list(mine_dense.shape)} here, "
                                      f"{list(theirs_dense.shape)} in the reference, for an integer output (it has "
                                      "no gradient): code that uses this upstream's shape takes another path"))
    elif mine.dtype == theirs.dtype:
        differences += compare_arrays(where, mine_dense, theirs_dense)
    elif as_policy and mine_dense is not None and theirs_dense is not None:
        differences += compare_arrays(where, mine_dense, theirs_dense.astype(np.float16))
    return differences


def _integer_zeros(value: np.ndarray | None) -> TypeGuard[np.ndarray]:
    return value is not None and value.dtype.kind in "iub" and not np.any(value)


def _shape_text(shape: tuple[int | None, ...] | None) -> str:
    return "<unknown rank>" if shape is None else str(list(shape))


def _covering_shape(*upstreams: Upstream) -> tuple[int, ...] | None:
    """Neither side knows its dense shape (both IndexedSlices without one): scatter both into the smallest
    shape that holds every index, only to compare them."""
    sliced = [(u.value, u.indices) for u in upstreams
              if u.kind == "indexed_slices" and u.value is not None and u.indices is not None]
    if not sliced:
        return None
    rows = max((int(np.max(indices)) + 1 if np.size(indices) else 0) for _, indices in sliced)
    return (rows, *sliced[0][0].shape[1:])


def _compatible(a: tuple[int | None, ...], b: tuple[int | None, ...]) -> bool:
    return len(a) == len(b) and all(x is None or y is None or x == y for x, y in zip(a, b, strict=True))


def compare_arrays(where: Location, mine: np.ndarray | None, theirs: np.ndarray | None) -> list[Difference]:
    if mine is None or theirs is None:
        if mine is None and theirs is None:
            return []
        present = theirs if mine is None else mine
        side = "here" if mine is None else "in the reference"
        if not np.any(np.asarray(present, np.float64)):
            return [Difference("none_vs_zeros", where, f"None {side}, zeros on the other side")]
        return [Difference("values", where, f"None {side}, nonzero values on the other side")]
    if mine.shape != theirs.shape:
        return [Difference("shape", where, f"shape {list(mine.shape)} here, {list(theirs.shape)} in the reference")]
    if mine.dtype != theirs.dtype:
        return [Difference("dtype", where, f"{mine.dtype} here, {theirs.dtype} in the reference")]
    tolerance = tolerance_for(theirs.dtype)
    a, b = mine.astype(np.float64), theirs.astype(np.float64)
    close = np.isclose(a, b, rtol=tolerance.rtol, atol=tolerance.atol, equal_nan=True)
    if close.all():
        return []
    error = np.abs(a - b)
    first = tuple(int(i) for i in np.argwhere(~close)[0])
    max_abs = float(np.nanmax(np.where(close, 0.0, error)))
    with np.errstate(divide="ignore", invalid="ignore"):
        max_rel = float(np.nanmax(np.where(close, 0.0, error / np.abs(b))))
    detail = (f"values differ at {int((~close).sum())} of {close.size} elements: max abs error {max_abs:.3g}, "
              f"max rel error {max_rel:.3g}, first at index {list(first)} ({a[first]:.6g} here, "
              f"{b[first]:.6g} in the reference)")
    return [Difference("values", where, detail, max_abs=max_abs, max_rel=max_rel, index=first)]
