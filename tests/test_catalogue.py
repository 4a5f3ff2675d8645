"""The built-in catalogue: real-world specs that run in every native variant and agree."""

import pytest

import compat
from compat.catalogue import CATALOGUE, catalogue_spec
from compat.checker import check

REQUIRED = {"sign_ste", "scaled_ste", "gradient_reversal", "clip_grad_by_value", "clip_grad_by_norm", "guided_relu",
            "dorefa_round", "two_input_mul", "multi_output_int", "variable_scale"}


def test_catalogue_has_the_required_specs_with_descriptions():
    assert REQUIRED <= set(CATALOGUE)
    for name, factory in CATALOGUE.items():
        spec = factory()
        assert isinstance(spec, compat.GradientSpec) and spec.name == name and spec.description
    assert catalogue_spec("variable_scale").variables
    with pytest.raises(KeyError, match="unknown catalogue spec 'nope'.*sign_ste"):
        catalogue_spec("nope")


def test_every_catalogue_spec_runs_in_every_native_variant_and_agrees():
    report = check([factory() for factory in CATALOGUE.values()], scenarios=["weighted", "gather"],
                   variants=list(compat.NATIVE_VARIANTS))
    assert report.exit_code == 0, [(c.spec, c.variant, c.differences) for c in report.unexpected]
    for cell in report.cells:
        assert cell.result.status == "ok", cell.result
        assert cell.result.calls >= 1
