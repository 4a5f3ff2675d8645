"""Entries are read without running the module, parsed from a flag, and get deterministic, safe inputs."""

from __future__ import annotations

import numpy as np
import pytest

from compat.verify import EntriesError, example_inputs, parse_entries, read_entries
from compat.verify._entries import Constant, declares_entries


def test_entries_are_read_statically():
    source = 'import sys\nsys.exit(1)\nGRADCOMPAT_ENTRIES = {"f": [("float32", [3]), ("int32", [])]}\n'
    assert read_entries(source) == {"f": [("float32", [3]), ("int32", [])]}


@pytest.mark.parametrize("source, match", [
    ("x = 1\n", "no module-level GRADCOMPAT_ENTRIES"),
    ("GRADCOMPAT_ENTRIES = make()\n", "plain literal"),
    ("GRADCOMPAT_ENTRIES = {'f': [('float32', 3)]}\n", r"input 0: expected \(dtype, shape\)"),
    ("GRADCOMPAT_ENTRIES = {'f': [('complex64', [3])]}\n", "dtype must be"),
    ("def f(:\n", "cannot parse"),
])
def test_bad_entries_say_how_to_declare_them(source, match):
    with pytest.raises(EntriesError, match=match):
        read_entries(source, "ops.py")


def test_entries_parse_from_a_flag():
    assert parse_entries("ste:float32[3];product:float32[2,3],float64[2, 3];scalar:float32[]") == {
        "ste": [("float32", [3])], "product": [("float32", [2, 3]), ("float64", [2, 3])],
        "scalar": [("float32", [])]}
    with pytest.raises(EntriesError, match="name:dtype"):
        parse_entries("ste=float32[3]")


def test_example_inputs_are_deterministic_and_away_from_discontinuities():
    spec = [("float32", [50]), ("int64", [4]), ("bfloat16", [2])]
    first, again = example_inputs("f", spec), example_inputs("f", spec)
    assert all(np.array_equal(a, b) for a, b in zip(first, again, strict=True))
    floats = first[0].astype(np.float64)
    assert np.allclose(floats - np.floor(floats), 0.3, atol=1e-6)  # sign, round, floor, relu are smooth here
    assert first[1].dtype == np.int64 and set(first[1]) <= {0, 1, 2}
    assert first[2].dtype.name == "bfloat16"
    assert not np.array_equal(example_inputs("g", spec)[0], floats)


@pytest.mark.parametrize("text", ["model:float32[", "model:float32[3]x", "model:float32[3],,", "model:[3]"])
def test_malformed_entry_flags_are_refused_not_read_as_fewer_inputs(text):
    with pytest.raises(EntriesError, match="dtype\\[shape\\]"):
        parse_entries(text)


def test_the_last_assignment_counts_as_in_python_and_a_comment_declares_nothing():
    source = ('GRADCOMPAT_ENTRIES = {"old": [("float32", [3])]}\n'
              'GRADCOMPAT_ENTRIES = {"new": [("float64", [2])]}\n')
    assert read_entries(source) == {"new": [("float64", [2])]}
    assert declares_entries(source)
    assert not declares_entries("# GRADCOMPAT_ENTRIES come from --entries\nx = 'GRADCOMPAT_ENTRIES'\n")


@pytest.mark.parametrize("text, match", [
    ("f:float32[3]float32[3]", "separated by commas"),
    ("f:float32[3];f:float32[2]", "given twice"),
    ("f:", "has no inputs"),
    ("f:float32[100000,100000]", r"10,000,000,000 elements \(38,147 MiB\)"),
])
def test_entry_flags_that_python_would_read_otherwise_are_refused(text, match):
    with pytest.raises(EntriesError, match=match):
        parse_entries(text)


def test_a_declared_entry_without_inputs_is_refused():
    with pytest.raises(EntriesError, match="non-empty list"):
        read_entries("GRADCOMPAT_ENTRIES = {'f': []}\n")


def test_arguments_that_are_not_tensors_are_constants_in_both_forms():
    expected = {"quantize": [("float32", [3]), Constant(4), Constant("SAME"), Constant(None)]}
    assert read_entries("GRADCOMPAT_ENTRIES = {'quantize': [('float32', [3]), 4, 'SAME', None]}\n") == expected
    assert parse_entries("quantize:float32[3],4,'SAME',None") == expected
    with pytest.raises(EntriesError, match="no tensor input"):
        parse_entries("f:4")
