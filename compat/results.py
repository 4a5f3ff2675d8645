"""Plain, frozen result values: what a variant's gradient function received and what it produced."""

from __future__ import annotations

import dataclasses
import hashlib
import threading
import weakref
from typing import Literal

import numpy as np

UpstreamKind = Literal["none", "dense", "indexed_slices"]
Status = Literal["ok", "not_called", "unsupported", "error", "not_observable"]
STATUSES: tuple[Status, ...] = ("ok", "not_called", "unsupported", "error", "not_observable")
"""`not_observable`: the context ran, but gradcompat cannot capture what the gradient function received there
(e.g. a Defun body under XLA): calls and upstreams are unknown, never guessed; the message says why."""


_INTERN_MIN_ELEMENTS = 1024
_interned: weakref.WeakValueDictionary[tuple[str, tuple[int, ...], bytes], np.ndarray] = weakref.WeakValueDictionary()
_intern_lock = threading.Lock()


def intern_array(value: np.ndarray) -> np.ndarray:
    """`value`, or an equal read-only array already held by another result: one copy per distinct content.

    A check keeps every cell's upstreams and input gradients, and most cells receive the same values (every
    variant of a scenario that agrees), so a 2,000,000-element input would otherwise hold hundreds of equal
    8 MB arrays. Small arrays are returned as they are (read-only too).
    """
    value = np.asarray(value)
    if not value.flags.c_contiguous:
        value = value.copy(order="C")
    value.flags.writeable = False
    if value.size < _INTERN_MIN_ELEMENTS or value.dtype.hasobject:
        return value
    content = value.view(np.uint8).data if value.ndim else value.tobytes()
    key = (value.dtype.str, value.shape, hashlib.blake2b(content, digest_size=16).digest())
    with _intern_lock:
        found = _interned.get(key)
        if found is not None and np.array_equal(found, value, equal_nan=value.dtype.kind in "fc"):
            return found
        _interned[key] = value
    return value


@dataclasses.dataclass(frozen=True, eq=False)
class Upstream:
    """One upstream gradient as a gradient function received it, captured at the function's entry.

    `static_shape` is what the function saw while it was built (None entries are unknown dimensions; the
    whole field is None for unknown rank); `value` is what flowed at run time (for IndexedSlices, the
    slices' values, with `indices` and `dense_shape`).
    """

    kind: UpstreamKind
    dtype: str | None = None
    static_shape: tuple[int | None, ...] | None = None
    value: np.ndarray | None = None
    indices: np.ndarray | None = None
    dense_shape: tuple[int, ...] | None = None

    def to_dense(self, shape: tuple[int, ...] | None = None) -> np.ndarray | None:
        """The value as a dense array (IndexedSlices scattered and summed), or None for a None upstream.

        IndexedSlices without a `dense_shape` (TensorFlow may leave it unknown) are scattered into `shape`;
        without either, ValueError: the dense shape is never guessed. IndexError when an index is outside it.
        """
        if self.kind == "none" or self.value is None:
            return None
        if self.kind == "dense":
            return self.value
        shape = self.dense_shape if self.dense_shape is not None else shape
        if shape is None:
            raise ValueError("IndexedSlices without a dense_shape: pass the shape to scatter into")
        dense = np.zeros(shape, dtype=self.value.dtype)
        with np.errstate(over="ignore", invalid="ignore"):  # float16 sums overflow to inf, as TensorFlow's do
            np.add.at(dense, np.asarray(self.indices), self.value)
        return dense

    @property
    def known_shape(self) -> tuple[int, ...] | None:
        """The dense shape of the value, if TensorFlow gave it (always for a dense upstream)."""
        if self.kind == "dense" and self.value is not None:
            return tuple(self.value.shape)
        return self.dense_shape

    def describe(self) -> str:
        if self.kind == "none":
            return "None"
        shape = "<unknown rank>" if self.static_shape is None else list(self.static_shape)
        if self.kind == "dense":
            return f"Tensor {self.dtype}{shape}"
        dense_shape = "<unknown>" if self.dense_shape is None else list(self.dense_shape)
        return f"IndexedSlices {self.dtype} values{shape} dense_shape={dense_shape}"

    def __str__(self) -> str:
        if self.value is None:
            return self.describe()
        text = np.array2string(self.value, threshold=8, precision=4)
        if self.kind == "indexed_slices":
            text += f" at indices {np.array2string(np.asarray(self.indices), threshold=8)}"
        return f"{self.describe()} = {text}"


Scaling = Literal["none", "global_batch"]
"""How a distributed run scaled each replica's loss: `none` (its shard's part of the loss as it is) or
`global_batch` (divided by the global batch size, as `tf.nn.compute_average_loss` does)."""


@dataclasses.dataclass(frozen=True, eq=False)
class ReplicaRecord:
    """What one replica of a distributed run received and computed, under one loss scaling.

    `rows` are the rows of the global batch the replica's shard holds (as the distributed dataset handed
    them out); `input_grads` are the replica's own gradients: for each input, of its shard's rows; for each
    variable, before the cross-replica reduction.
    """

    replica: int
    rows: tuple[int, ...]
    scaling: Scaling
    upstreams: tuple[tuple[Upstream, ...], ...] = ()
    input_grads: tuple[np.ndarray | None, ...] = ()


@dataclasses.dataclass(frozen=True, eq=False)
class VariantResult:
    """The outcome of one spec in one variant (`mechanism@context`).

    Attributes:
      upstreams: one tuple per call of the gradient function, each with one Upstream per forward output
        (per op output for an `op_type` override).
      calls: how many times the gradient function ran (0: TensorFlow bypassed it).
      traces: how many times its Python body was entered to build it (graph contexts build once, run later).
      input_grads: the gradients TensorFlow computed for each input (dense numpy, or None), whoever made them.
      input_grad_kinds: the form TensorFlow returned each input gradient in: `none`, `dense` or
        `indexed_slices` (its values are in `input_grads`, scattered to the input's shape).
      upstream_scale: the factor every upstream arrived multiplied by (`mixed_precision`'s loss scale, `keras_fit`'s
        1 / batch size); `upstreams` hold the received values divided by it, in the dtype received, so they
        compare. None: unscaled.
      compute_dtype: the float dtype the context computes in by design (`float16` under `mixed_precision`): values
        are compared at its precision. None: the inputs' dtype.
      violations: how the gradient function broke its contract (a gradient of the wrong dtype or shape),
        handed to TensorFlow as returned; `status` says what TensorFlow made of it in this context.
      replicas: a distributed context's per-replica records, for both loss scalings; `upstreams` and
        `input_grads` then hold the unscaled run (every replica's calls; the gradients reduced with SUM).
      scaled_input_grads: a distributed context's gradients reduced with SUM when each replica's loss was
        divided by `global_batch`.
    """

    spec: str
    variant: str
    mechanism: str
    context: str
    status: Status
    input_grads: tuple[np.ndarray | None, ...] = ()
    upstreams: tuple[tuple[Upstream, ...], ...] = ()
    calls: int = 0
    traces: int = 0
    message: str = ""
    downstream: str = "sum"
    input_grad_kinds: tuple[str, ...] = ()
    violations: tuple[str, ...] = ()
    upstream_scale: float | None = None
    compute_dtype: str | None = None
    replicas: tuple[ReplicaRecord, ...] = ()
    scaled_input_grads: tuple[np.ndarray | None, ...] = ()
    global_batch: int | None = None

    @property
    def upstream(self) -> tuple[Upstream, ...] | None:
        """The upstreams of the first call, or None if the gradient function never ran."""
        return self.upstreams[0] if self.upstreams else None

    def __str__(self) -> str:
        lines = [f"{self.variant} [{self.status}] spec `{self.spec}`, downstream `{self.downstream}`, "
                 f"calls={self.calls}, traces={self.traces}"]
        if self.message:
            lines.append(f"  message: {self.message}")
        if self.upstream_scale is not None:
            scale = self.upstream_scale
            lines.append(f"  upstreams arrived multiplied by the loss scale {scale:g}; shown divided by it")
        for call_index, call in enumerate(self.upstreams):
            for output_index, upstream in enumerate(call):
                lines.append(f"  call {call_index} upstream[{output_index}]: {upstream}")
        for problem in self.violations:
            lines.append(f"  contract: {problem}")
        for record in self.replicas:
            for call in record.upstreams:
                for output_index, upstream in enumerate(call):
                    lines.append(f"  replica {record.replica} rows {list(record.rows)} loss scaling {record.scaling}: "
                                 f"upstream[{output_index}]: {upstream}")
        reduced = " (reduced with SUM over replicas)" if self.replicas else ""
        for index, grad in enumerate(self.input_grads):
            shown = "None" if grad is None else np.array2string(grad, threshold=8, precision=4)
            form = " (IndexedSlices)" if self.input_grad_kinds[index:index + 1] == ("indexed_slices",) else ""
            lines.append(f"  input_grad[{index}]{form}{reduced}: {shown}")
        return "\n".join(lines)
