"""A real compat-check JSON report, shared by the tests of compat.releases."""

import json

import pytest


@pytest.fixture(name="report", scope="session")
def report_fixture():
    """A real scaled_ste report (two scenarios, every variant) as compat-check --format=json writes it."""
    from compat.catalogue import CATALOGUE
    from compat.checker import check
    from compat.reports.json_report import as_dict

    data = as_dict(check([CATALOGUE["scaled_ste"]()], scenarios=["sum", "scaled"]))
    return json.loads(json.dumps(data))
