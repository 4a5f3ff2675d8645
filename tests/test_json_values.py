"""Tests for compat/json_values.py: non-finite floats and differences as JSON, written and read back."""

import json
import math

from compat.comparison import Difference, Location, Part
from compat.json_values import difference_dict, difference_from_dict


def _round_trip(difference: Difference) -> Difference:
    return difference_from_dict(json.loads(json.dumps(difference_dict(difference), allow_nan=False)))


def test_a_difference_reads_back_as_it_was_written():
    located = Location("upstream", 1, call=2, part=Part(0, (0, 1), global_batch=True))
    difference = Difference("values", located, "values differ at 1 of 4 elements", max_abs=0.5, max_rel=math.inf,
                            index=(1, 0))
    assert _round_trip(difference) == difference


def test_non_finite_errors_are_strict_json_and_read_back():
    written = difference_dict(Difference("values", Location("input_grad", 0), "nan", max_abs=math.nan))
    assert written["max_abs"] == "NaN"
    assert math.isnan(_round_trip(Difference("values", Location("input_grad", 0), "nan", max_abs=math.nan)).max_abs)


def test_the_written_fields_are_those_reports_have_always_had():
    written = difference_dict(Difference("static_shape", Location("upstream", 0), "static shape [4] here"))
    assert written == {"kind": "static_shape", "detail": "upstream[0]: static shape [4] here", "where": "upstream[0]",
                       "breaking": False}
