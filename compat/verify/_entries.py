"""Entry points to verify: read `GRADCOMPAT_ENTRIES` statically, parse them from flags, make example inputs."""

from __future__ import annotations

import ast
import re
import zlib

import numpy as np

Entries = dict[str, list[tuple[str, list[int]]]]
"""Entry function name -> one (dtype name, shape) per input, e.g. {"sign_ste": [("float32", [3])]}."""

ENTRIES_CONSTANT = "GRADCOMPAT_ENTRIES"
_SEED = 20261210
_ENTRY_FLAG = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*:(.*)$")
_INPUT_FLAG = re.compile(r"^\s*([a-z0-9]+)\s*\[([0-9,\s]*)\]\s*$")
_EXAMPLE = 'GRADCOMPAT_ENTRIES = {"my_op": [("float32", [3]), ("float32", [2, 3])]}'


class EntriesError(ValueError):
    """The entry points to verify are missing or malformed; the message says how to declare them."""


def read_entries(source: str, filename: str = "<source>") -> Entries:
    """The module-level `GRADCOMPAT_ENTRIES` literal of `source`, read with `ast` (the code never runs).

    Raises:
      EntriesError: the source does not parse, has no such constant, or it is not a valid literal.
    """
    try:
        tree = ast.parse(source, filename=filename)
    except SyntaxError as exc:
        raise EntriesError(f"{filename}:{exc.lineno}: cannot parse the module to read {ENTRIES_CONSTANT} "
                           f"({exc.msg}); fix the syntax or pass the entries explicitly") from None
    for node in tree.body:
        value = _assigned_value(node)
        if value is None:
            continue
        try:
            literal = ast.literal_eval(value)
        except ValueError:
            raise EntriesError(f"{filename}:{node.lineno}: {ENTRIES_CONSTANT} must be a plain literal, like "
                               f"{_EXAMPLE}") from None
        return validate_entries(literal, f"{filename}:{node.lineno}")
    raise EntriesError(f"{filename}: no module-level {ENTRIES_CONSTANT}; declare the entry points to verify, "
                       f"like {_EXAMPLE}, or pass them explicitly")


def _assigned_value(node: ast.stmt) -> ast.expr | None:
    if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == ENTRIES_CONSTANT
                                            for t in node.targets):
        return node.value
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id == ENTRIES_CONSTANT:
        return node.value
    return None


def validate_entries(value: object, where: str = "entries") -> Entries:
    """`value` as Entries (lists of (dtype, shape) pairs), or EntriesError naming what is wrong."""
    if not isinstance(value, dict) or not value:
        raise EntriesError(f"{where}: expected a non-empty dict of function name -> inputs, like {_EXAMPLE}")
    entries: Entries = {}
    for name, inputs in value.items():
        if not isinstance(name, str) or not name.isidentifier():
            raise EntriesError(f"{where}: entry name {name!r} is not a function name")
        if not isinstance(inputs, (list, tuple)):
            raise EntriesError(f"{where}: entry `{name}`: expected a list of (dtype, shape) pairs, got {inputs!r}")
        entries[name] = [_input(name, index, item, where) for index, item in enumerate(inputs)]
    return entries


def _input(name: str, index: int, item: object, where: str) -> tuple[str, list[int]]:
    problem = f"{where}: entry `{name}` input {index}: expected (dtype, shape) like (\"float32\", [2, 3]), got {item!r}"
    if not isinstance(item, (list, tuple)) or len(item) != 2:
        raise EntriesError(problem)
    dtype, shape = item
    if not isinstance(shape, (list, tuple)) or not all(isinstance(d, int) and d >= 0 for d in shape):
        raise EntriesError(problem)
    if not isinstance(dtype, str) or _numpy_dtype(dtype) is None:
        raise EntriesError(f"{problem}; the dtype must be a numpy/TensorFlow name: float32, float64, float16, "
                           f"bfloat16, int32, int64 or bool")
    return dtype, list(shape)


def parse_entries(text: str) -> Entries:
    """Entries from a command-line flag: `name:dtype[shape],dtype[shape];name2:...`.

    Example: `sign_ste:float32[3];product:float32[2,3],float32[2,3]` (an empty shape `float32[]` is a scalar).
    """
    entries: dict[str, list[tuple[str, list[int]]]] = {}
    for part in filter(str.strip, text.split(";")):
        match = _ENTRY_FLAG.match(part)
        if not match:
            raise EntriesError(f"entry {part.strip()!r}: expected name:dtype[shape],..., like "
                               f"sign_ste:float32[3] or product:float32[2,3],float32[2,3]")
        inputs = []
        specs = re.findall(r"[^,\[\]]+\[[^\]]*\]", match.group(2))
        if "".join(specs).replace(" ", "") != match.group(2).replace(" ", "").replace("],", "]"):
            raise EntriesError(f"entry `{match.group(1)}`: inputs {match.group(2)!r} are not dtype[shape],...: "
                               f"e.g. float32[3] or float32[2,3],float32[2,3]")
        for spec in specs:
            found = _INPUT_FLAG.match(spec.strip(", "))
            if not found:
                raise EntriesError(f"entry `{match.group(1)}`: input {spec.strip(', ')!r} is not dtype[shape]")
            dims = [int(d) for d in found.group(2).replace(" ", "").split(",") if d]
            inputs.append((found.group(1), dims))
        entries[match.group(1)] = inputs
    return validate_entries(entries, "--entries")


def _numpy_dtype(name: str) -> np.dtype | None:
    if name == "bfloat16":
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    try:
        dtype = np.dtype(name)
    except TypeError:
        return None
    return dtype if dtype.kind in "fiub" else None


def example_inputs(entry: str, inputs: list[tuple[str, list[int]]]) -> list[np.ndarray]:
    """Deterministic inputs for `entry`: floats k + 0.3 (k in -3..2), away from the discontinuities of sign,
    round, floor and relu; integers in 0..2 (valid as small indices); seeded by the entry name."""
    values = []
    for index, (dtype_name, shape) in enumerate(inputs):
        dtype = _numpy_dtype(dtype_name)
        assert dtype is not None, "validate_entries checks every dtype"
        rng = np.random.default_rng([_SEED, zlib.crc32(entry.encode()), index])
        if dtype.kind == "b":
            value = rng.integers(0, 2, size=shape).astype(bool)
        elif dtype.kind in "iu":
            value = rng.integers(0, 3, size=shape).astype(dtype)
        else:
            value = (rng.integers(-3, 3, size=shape) + 0.3).astype(dtype)
        values.append(np.asarray(value))
    return values
