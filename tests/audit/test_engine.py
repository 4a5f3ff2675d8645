"""Tree-wide rules (GC008, GC007 notes), determinism across job counts, and the report summary."""

from __future__ import annotations

from compat.audit import RULES, audit_paths


def test_gc008_same_name_registered_in_two_files(audit_source):
    report = audit_source(files={
        "a": "import tensorflow as tf\n@tf.RegisterGradient('Dup')\ndef g(op, grad):\n    return grad\n",
        "pkg__b": "from tensorflow.python.framework import ops\nops.RegisterGradient('Dup')(lambda op, g: g)\n",
    })
    gc008 = [f for f in report.findings if f.rule == "GC008"]
    assert len(gc008) == 1
    assert gc008[0].path.endswith("pkg/b.py") and gc008[0].line == 2
    assert "a.py:2" in gc008[0].message and "Registering two gradient" in gc008[0].message


def test_gc008_not_for_distinct_names(audit_source):
    report = audit_source(files={
        "a": "import tensorflow as tf\ntf.RegisterGradient('One')(abs)\n",
        "b": "import tensorflow as tf\ntf.RegisterGradient('Two')(abs)\n",
    })
    assert "GC008" not in [f.rule for f in report.findings]


def test_gc007_note_for_map_value_registered_nowhere(audit_source):
    report = audit_source(files={
        "reg": "import tensorflow as tf\n@tf.RegisterGradient('Known')\ndef g(op, grad):\n    return grad\n",
        "use": "def f(g):\n    with g.gradient_override_map({'Sign': 'Known', 'Abs': 'Missing',"
               " 'Relu': 'Identity'}):\n        pass\n",
    })
    notes = [f for f in report.findings if f.rule == "GC007"]
    assert len(notes) == 1 and notes[0].severity == "note" and "'Missing'" in notes[0].message


def test_parallel_and_serial_runs_agree(tmp_path, monkeypatch):
    monkeypatch.setattr("compat.audit.engine._PARALLEL_MIN_FILES", 4)
    for i in range(40):
        body = f"import tensorflow as tf\ntf.RegisterGradient('G{i % 7}')(abs)\n" if i % 3 else "x = 1\n"
        (tmp_path / f"m{i}.py").write_text(body)
    serial = audit_paths([str(tmp_path)], jobs=1)
    parallel = audit_paths([str(tmp_path)], jobs=2)
    assert serial == parallel
    assert serial.files_scanned == 40
    assert serial.counts["GC008"] == 26 - 7


def test_counts_list_every_rule(audit_source):
    report = audit_source("x = 1\n")
    assert list(report.counts) == list(RULES) and not any(report.counts.values())
    assert report.files_scanned == 1 and report.lines == 1 and report.files_parsed == 0


def test_an_internal_failure_on_one_file_is_gc000_and_the_run_goes_on(tmp_path, monkeypatch):
    (tmp_path / "odd.py").write_text("import tensorflow as tf\ntf.RegisterGradient('AGrad')(abs)\n")
    (tmp_path / "fine.py").write_text("import tensorflow as tf\ntf.RegisterGradient('B')(abs)\n")
    real_audit_tree = __import__("compat.audit.engine", fromlist=["audit_tree"]).audit_tree

    def flaky(path, *args, **kwargs):
        if path.endswith("odd.py"):
            raise ValueError("unexpected construct")
        return real_audit_tree(path, *args, **kwargs)

    monkeypatch.setattr("compat.audit.engine.audit_tree", flaky)
    report = audit_paths([str(tmp_path)], jobs=1)
    by_file = {f.path.rsplit("/", 1)[-1]: f for f in report.findings}
    assert by_file["odd.py"].rule == "GC000"
    assert "compat-audit failed on this file (ValueError: unexpected construct)" in by_file["odd.py"].message
    assert by_file["fine.py"].rule == "GC003"


def test_gc008_not_for_the_two_arms_of_one_if_else(if_else_report, audit_source):
    assert [f.rule for f in if_else_report.findings] == ["GC003", "GC003"]
    report = audit_source("""
        import tensorflow as tf
        try:
            import fast
        except ImportError:
            tf.RegisterGradient("B")(abs)
        else:
            tf.RegisterGradient("B")(abs)
    """)
    assert "GC008" not in [f.rule for f in report.findings]


def test_gc008_still_for_an_if_inside_a_loop_or_after_it(audit_source):
    report = audit_source("""
        import tensorflow as tf
        for flag in (True, False):
            if flag:
                tf.RegisterGradient("AGrad")(abs)
            else:
                tf.RegisterGradient("AGrad")(abs)
        if flag:
            tf.RegisterGradient("B")(abs)
        else:
            pass
        tf.RegisterGradient("B")(abs)
    """)
    assert [(f.rule, f.line) for f in report.findings if f.rule == "GC008"] == [("GC008", 7), ("GC008", 12)]
