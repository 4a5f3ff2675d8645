"""Each entry runs as its program would: once per scenario, with its variables, seeded alike on both sides."""

from __future__ import annotations

from compat.verify import VerifyReport

CONTEXTS = ("v1_session", "eager_tape")


def _statuses(report: VerifyReport, entry: str) -> set[str]:
    return {cell.status for cell in report.cells if cell.entry == entry}


def test_get_variable_without_reuse_runs_once_per_scenario_and_its_gradient_is_compared(trust_report):
    # Built into one graph, the second scenario would raise "Variable W already exists".
    assert _statuses(trust_report, "scaled_by_w") == {"same", "skipped"}, trust_report.render_text()
    assert trust_report.cell("scaled_by_w", "weighted", "v1_session").differences == ()


def test_a_gradient_registered_inside_the_entry_is_registered_once_per_scenario(trust_report):
    # The second registration in one process raised KeyError: Registering two gradient with name ...
    cells = [c for c in trust_report.cells if c.entry == "register_inside"]
    assert all("KeyError" not in c.message for c in cells)
    assert trust_report.cell("register_inside", "weighted", "eager_tape").status == "same"


def test_a_rewrite_that_changes_only_the_variable_gradient_differs(trust_report):
    for context in CONTEXTS:
        cell = trust_report.cell("wrong_dw", "weighted", context)
        assert cell.status == "differs"
        assert [d.where for d in cell.differences] == ["variable_grad[W:0]"], cell
    assert trust_report.cell("wrong_dw", "forward", "eager_tape").status == "same"
    assert not trust_report.ok


def test_random_ops_with_an_op_seed_draw_the_same_numbers_on_both_sides(trust_report):
    assert _statuses(trust_report, "seeded_noise") == {"same", "skipped"}
    assert "random ops with an op-level `seed=` draw the same numbers" in trust_report.notes["seeded_noise"]


def test_unseeded_random_forward_says_so_instead_of_only_values_differ(trust_report):
    cell = trust_report.cell("unseeded_noise", "forward", "eager_tape")
    assert cell.status == "differs" and "random" in cell.message
    assert "op-level `seed=`" in trust_report.notes["unseeded_noise"]
    assert "note: `unseeded_noise`: the original's forward is random" in trust_report.render_text()


def test_a_symbol_tf2_removed_is_named_with_its_line(trust_report):
    cell = trust_report.cell("uses_contrib", "forward", "v1_session")
    assert cell.status == "error"
    assert "`return tf.contrib.layers.flatten(x)` needs `tf.contrib`" in cell.message
    assert "ops.py:" in cell.message and "tf.contrib was removed in TensorFlow 2.0" in cell.message


def test_an_exit_in_user_code_is_described_as_the_checker_describes_it():
    from compat.verify._unit import describe

    assert describe(SystemExit(3)) == "SystemExit(3) (user code called sys.exit)"
    assert describe(ValueError("x" * 2000)).endswith(" ...") and describe(ValueError("")) == "ValueError:"
