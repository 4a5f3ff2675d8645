"""The public API: every name in compat.__all__ resolves, and importing compat does not import TensorFlow."""

import subprocess
import sys

import compat


def test_every_public_name_resolves():
    for name in compat.__all__:
        assert getattr(compat, name) is not None, name
    assert sorted(dir(compat)) == sorted(compat.__all__)


def test_unknown_names_list_the_public_ones():
    try:
        compat.no_such_name  # noqa: B018
    except AttributeError as error:
        assert "public names" in str(error) and "GradientSpec" in str(error)
    else:
        raise AssertionError("expected AttributeError")


def test_import_is_cheap():
    code = "import sys, compat; print('tensorflow' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True).stdout.strip() == "False"
