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


def test_syntax_errors_name_the_line_once_and_relative_paths_get_the_line(tmp_path, monkeypatch):
    (tmp_path / "syntax.py").write_text("x = 1\n\ndef f(:\n")
    (tmp_path / "raises.py").write_text("x = 1\nraise ValueError('nope')\n")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SpecLoadError) as caught:
        load_specs(["syntax.py:X"])
    assert str(caught.value).count("line 3") == 1 and "SyntaxError" in str(caught.value)
    with pytest.raises(SpecLoadError, match=r"ValueError: nope \(line 2\)"):
        load_specs(["./raises.py:X"])


def test_system_exit_in_a_spec_file_or_factory_is_a_load_error(tmp_path):
    exits = tmp_path / "exits.py"
    exits.write_text("import sys\nsys.exit(3)\n")
    with pytest.raises(SpecLoadError, match=r"SystemExit\(3\) \(user code called sys.exit\) \(line 2\)"):
        load_specs([f"{exits}:X"])
    factory = tmp_path / "factory.py"
    factory.write_text("import sys\ndef MAKE():\n    sys.exit(5)\n")
    with pytest.raises(SpecLoadError, match=r"calling it raised SystemExit\(5\)"):
        load_specs([f"{factory}:MAKE"])


def test_a_file_named_twice_is_imported_once(tmp_path, spec_file):
    counter = tmp_path / "counted.py"
    counter.write_text(spec_file.read_text() + "\nimport builtins\nbuiltins.gradcompat_imports = "
                       "getattr(builtins, 'gradcompat_imports', 0) + 1\n")
    import builtins

    before = getattr(builtins, "gradcompat_imports", 0)
    specs = load_specs([f"{counter}:MY_SPEC", f"{counter}:OTHER"])
    assert [spec.name for spec in specs] == ["mine", "other"]
    assert builtins.gradcompat_imports == before + 1
