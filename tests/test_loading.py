"""Loading specs named on the command line, with errors that name the file, the spec and the fix."""

import textwrap

import pytest

from compat.loading import SpecLoadError, load_specs

GOOD = textwrap.dedent('''
    import numpy as np
    import tensorflow as tf
    import compat

    MY_SPEC = compat.GradientSpec("mine", tf.identity, lambda i, o, u: [u[0]], [np.ones(2, np.float32)])
    OTHER = compat.GradientSpec("other", tf.identity, lambda i, o, u: [u[0]], [np.ones(2, np.float32)])
    BOTH = [MY_SPEC, OTHER]

    def factory():
        return compat.GradientSpec("made", tf.identity, lambda i, o, u: [u[0]], [np.ones(2, np.float32)])

    NOT_A_SPEC = 42
''')


@pytest.fixture
def spec_file(tmp_path):
    path = tmp_path / "my_ops.py"
    path.write_text(GOOD)
    return path


def test_catalogue_file_module_lists_and_factories(spec_file):
    assert [s.name for s in load_specs(["sign_ste"])] == ["sign_ste"]
    assert [s.name for s in load_specs([f"{spec_file}:MY_SPEC"])] == ["mine"]
    assert [s.name for s in load_specs([f"{spec_file}:BOTH"])] == ["mine", "other"]
    assert [s.name for s in load_specs([f"{spec_file}:factory"])] == ["made"]
    assert [s.name for s in load_specs([str(spec_file)])] == ["mine", "other"]
    assert [s.name for s in load_specs(["compat.catalogue:scaled_ste"])] == ["scaled_ste"]


@pytest.mark.parametrize("reference, expected", [
    ("nope", "not a catalogue spec"),
    ("missing.py:X", "file 'missing.py' does not exist"),
    ("{file}:NOT_A_SPEC", "is a int, not a compat.GradientSpec"),
    ("{file}:ABSENT", "has no attribute 'ABSENT'; GradientSpecs there: ['BOTH', 'MY_SPEC', 'OTHER']"),
    ("no_such_module_xyz:SPEC", "importing module 'no_such_module_xyz' failed: ModuleNotFoundError"),
])
def test_bad_references_name_what_is_wrong(spec_file, reference, expected):
    with pytest.raises(SpecLoadError) as caught:
        load_specs([reference.format(file=spec_file)])
    assert expected in str(caught.value)


def test_import_failures_name_the_file_and_line(tmp_path):
    broken = tmp_path / "broken.py"
    broken.write_text("import numpy\n\nraise RuntimeError('boom at import')\n")
    with pytest.raises(SpecLoadError, match=r"importing '.*broken.py' failed: RuntimeError: boom at import \(line 3\)"):
        load_specs([f"{broken}:X"])
    syntax = tmp_path / "syntax.py"
    syntax.write_text("def f(:\n")
    with pytest.raises(SpecLoadError, match="SyntaxError.*line 1"):
        load_specs([f"{syntax}:X"])


def test_duplicate_names_are_rejected(spec_file):
    with pytest.raises(SpecLoadError, match=r"several specs are named \['mine'\]"):
        load_specs([f"{spec_file}:MY_SPEC", f"{spec_file}:BOTH"])
