"""compat.reports.timings: two runs' reports compare equal once their wall times are zeroed, and only those."""

from compat.reports.timings import without_timings


def _rewrite_report(seconds: float, elapsed: float, sites: int) -> dict:
    verify = {"tool": "compat-verify", "elapsed_s": elapsed, "cells": [{"status": "same"}]}
    return {"tool": "compat-rewrite", "units": [{"label": "a.py", "seconds": seconds, "sites": sites}],
            "verify": {"a.py": verify, "b.py": "could not run: SyntaxError"}}


def test_runs_that_differ_only_in_wall_times_are_equal_and_the_input_is_kept():
    first, second = _rewrite_report(1.25, 3.5, 2), _rewrite_report(9.0, 0.1, 2)
    assert first != second
    assert without_timings(first) == without_timings(second)
    assert first["units"][0]["seconds"] == 1.25 and first["verify"]["a.py"]["elapsed_s"] == 3.5


def test_anything_the_run_computed_still_counts():
    assert without_timings(_rewrite_report(1.0, 1.0, 2)) != without_timings(_rewrite_report(1.0, 1.0, 3))
    verify = {"tool": "compat-verify", "elapsed_s": 2.0, "cells": [{"status": "differs"}]}
    assert without_timings(verify) != without_timings({**verify, "cells": [{"status": "same"}], "elapsed_s": 7.0})
    assert without_timings(verify)["elapsed_s"] == 0
