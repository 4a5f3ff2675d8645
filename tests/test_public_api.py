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


def test_public_submodules_are_reachable_from_import_compat_alone():
    """README shows `import compat; compat.testing.assert_native_variants_agree(...)`: a fresh process."""
    code = ("import sys, compat; print(callable(compat.audit.audit_paths), 'tensorflow' in sys.modules, "
            "callable(compat.testing.assert_native_variants_agree), callable(compat.reports.render))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["True", "False", "True", "True"]  # the audit alone never imports TensorFlow
