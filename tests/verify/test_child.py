"""Each (entry, context) runs in a process of its own: a crash costs one scenario, import-time graphs are kept."""

from __future__ import annotations

import textwrap

from compat.verify import verify_files


def test_an_abort_in_one_scenario_costs_only_the_scenarios_that_abort_and_quotes_the_fatal_line(trust_report):
    assert trust_report.cell("aborts_on_negative", "sum", "eager_tape").status == "same"
    assert trust_report.cell("aborts_on_negative", "forward", "v1_session").status == "same"
    cell = trust_report.cell("aborts_on_negative", "weighted", "eager_tape")
    assert cell.status == "error"
    assert "killed by SIGABRT" in cell.message and "Check failed: upstream >= 0" in cell.message
    # The other entries ran on: their cells never mention the abort.
    assert all("SIGABRT" not in c.message for c in trust_report.cells if c.entry != "aborts_on_negative")


IMPORT_TIME_GRAPH = textwrap.dedent('''
    import tensorflow as tf

    GRADCOMPAT_ENTRIES = {"shifted": [("float32", [3])]}
    SHIFT = tf.get_variable("shift", shape=[3], initializer=tf.zeros_initializer())  # built while importing


    @tf.RegisterGradient("ImportTimeDouble")
    def _double(op, grad):
        return 2.0 * grad


    def shifted(x):
        w = tf.get_variable("W", shape=[3], initializer=tf.ones_initializer())
        with tf.get_default_graph().gradient_override_map({"Sign": "ImportTimeDouble"}):
            return tf.sign(x) * w + SHIFT
''')

IMPORT_TIME_REWRITE = textwrap.dedent('''
    import tensorflow as tf

    SHIFT = tf.compat.v1.get_variable("shift", shape=[3], initializer=tf.compat.v1.zeros_initializer())


    @tf.custom_gradient
    def _double_sign(x):
        return tf.sign(x), lambda dy: 2.0 * dy


    def shifted(x):
        w = tf.compat.v1.get_variable("W", shape=[3], initializer=tf.compat.v1.ones_initializer())
        return _double_sign(x) * w + SHIFT
''')


def test_a_module_that_builds_ops_while_imported_runs_each_scenario_in_that_graph(tmp_path, write_pair):
    legacy, rewritten = write_pair(tmp_path, IMPORT_TIME_GRAPH, IMPORT_TIME_REWRITE)
    report = verify_files(str(legacy), str(rewritten), contexts=("eager_tape",),
                          scenarios=["forward", "sum", "weighted", "second_order"])
    assert report.ok, report.render_text()
    # Both variables get gradients; `shift` read by the entry, created while importing, is compared too.
    assert report.cell("shifted", "weighted", "eager_tape").differences == ()
