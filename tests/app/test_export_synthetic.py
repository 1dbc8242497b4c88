"""The Export page's synthetic copy through AppTest: the free owner-only preview, then the paid copy."""

from __future__ import annotations

import pytest

from dpcore.synthetic import SyntheticResult
from dpstudio.support.session import STATE_KEY
from dpstudio.support.state import SAMPLES

pytest.importorskip("mbi")


def test_the_synthetic_copy_is_previewed_for_free_then_made_and_charged(app):
    at = app("export")
    at.radio(key="copy_kind").set_value("synthetic").run()
    assert not at.exception and not at.error
    state = at.session_state[STATE_KEY]
    ledger = state.ledger()
    # Half of what is left (issue 28: a default never spends the whole budget), then the rest by hand: the copy must
    # still show once nothing is left.
    assert at.number_input(key="synthetic_epsilon").value == 0.5
    at.number_input(key="synthetic_epsilon").set_value(1.0).run()
    [b for b in at.button if b.label == "Run the utility preview"][0].click().run(timeout=900)
    assert not at.exception and not at.error
    [preview] = at.session_state[STATE_KEY].utility_previews.values()
    assert set(preview["copy"]) >= {"randomized copy", "synthetic copy"}
    assert ledger.spent == 0  # the preview is free
    assert any("owner only, free" in str(h.value) for h in at.subheader)
    assert any("simulated with MST" in str(c.value) for c in at.caption)
    [b for b in at.button if b.label.startswith("Make the synthetic copy")][0].click().run(timeout=900)
    assert not at.exception and not at.error
    result = at.session_state[STATE_KEY].release
    assert isinstance(result, SyntheticResult) and not result.seeded
    [(_dataset, step)] = at.session_state[STATE_KEY].releases  # what a recipe saved now makes again
    assert step.kind == "synthetic" and step.epsilon == 1.0
    assert ledger.spent == pytest.approx(1.0) and ledger.spent_delta == pytest.approx(1e-6)
    assert any("Synthetic copy made" in str(s.value) for s in at.success)
    assert [b for b in at.get("download_button") if "Synthetic table" in str(b.proto.label)]
    assert any("a new copy cannot be made" in str(w.value) for w in at.warning)  # nothing left, said without alarm
    # Another table chosen on the Data page: its Export page offers no copy of the table before.
    at.switch_page("pages/data.py").run()
    other = next(name for name in SAMPLES if name != at.session_state[STATE_KEY].dataset.name)
    next(box for box in at.selectbox if box.label == "Sample").set_value(other).run()
    assert at.session_state[STATE_KEY].dataset.name == other
    at.switch_page("pages/export.py").run()
    at.radio(key="copy_kind").set_value("synthetic").run()
    assert not at.exception and at.session_state[STATE_KEY].release is None
    assert not [b for b in at.get("download_button") if "Synthetic table" in str(b.proto.label)]


def test_the_preview_follows_the_chosen_method(app):
    at = app("export")
    at.radio(key="copy_kind").set_value("synthetic").run()
    at.radio(key="synthetic_method").set_value("aim").run()
    assert not at.exception
    captions = [str(c.value) for c in at.caption]
    assert any("simulated with AIM" in c for c in captions)
    assert any("round by round" in c for c in captions) and not any("a tree of pairs" in c for c in captions)
    [studied] = [m for m in at.multiselect if m.label.startswith("Columns the buyer will study together")]
    studied.set_value(list(studied.options[:3])).run()
    assert not at.exception
    assert any("AIM will favour" in str(c.value) and "among the 3 columns chosen" in str(c.value) for c in at.caption)


def test_a_second_copy_of_the_same_settings_needs_the_owners_tick_and_the_button_says_its_cost(app):
    at = app("export")
    at.radio(key="copy_kind").set_value("synthetic").run()
    at.number_input(key="synthetic_epsilon").set_value(0.3).run()
    [make] = [b for b in at.button if b.label.startswith("Make the synthetic copy")]
    assert make.label == "Make the synthetic copy (spends ε = 0.3, δ = 1e-06)" and not make.disabled
    make.click().run(timeout=900)
    ledger = at.session_state[STATE_KEY].ledger()
    assert not at.exception and ledger.spent == pytest.approx(0.3)
    [make] = [b for b in at.button if b.label.startswith("Make the synthetic copy")]
    assert make.disabled and any("downloading it again costs nothing" in str(i.value) for i in at.info)
    at.checkbox(key="synthetic_fresh_copy").check().run()
    [b for b in at.button if b.label.startswith("Make the synthetic copy")][0].click().run(timeout=900)
    assert not at.exception and ledger.spent == pytest.approx(0.6)
    [make] = [b for b in at.button if b.label.startswith("Make the synthetic copy")]
    assert make.disabled  # the tick was for that copy only
    at.number_input(key="synthetic_epsilon").set_value(0.2).run()
    [make] = [b for b in at.button if b.label.startswith("Make the synthetic copy")]
    assert not make.disabled  # other settings: another copy, its cost on the button


def test_the_preview_says_before_the_spend_when_a_copy_is_no_better_than_the_most_common_value():
    """A walk-through's shop table: the preview showed the copy at 0.800 against the guess's 0.883 and said nothing,
    and the warning came only once the copy was paid for."""
    from streamlit.testing.v1 import AppTest

    def page(synthetic: float) -> None:
        import pandas as pd

        from dpstudio.support.synthetic_view import show_preview

        rows = [("synthetic copy", synthetic), ("randomized copy", 0.9), ("most common class", 0.883)]
        show_preview(pd.DataFrame([{"copy": copy, "measure": "accuracy", "value": value} for copy, value in rows]))

    useless = AppTest.from_function(page, args=(0.8,)).run()
    assert not useless.exception
    [warning] = [w.value for w in useless.warning]
    assert "a model trained on the synthetic copy does no better" in warning
    assert not AppTest.from_function(page, args=(0.95,)).run().warning
