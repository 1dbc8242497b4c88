"""The Train page offers the DP additive model with its sentence, trains it, charges its ε and shows its weights."""

from __future__ import annotations

import pytest

from dpstudio.support.session import STATE_KEY


def test_the_additive_model_trains_from_the_page(app):
    at = app("train")
    at.selectbox[0].set_value("dp_additive_reg").run()
    assert any("One step function per column" in str(c.value) for c in at.caption)
    assert not at.warning or not any("Approximate DP" in str(w.value) for w in at.warning)  # pure ε: no δ to choose
    at.text_input(key="train_epsilon").set_value("0.5").run()
    [b for b in at.button if b.label == "Train"][0].click().run()
    assert not at.exception
    state = at.session_state[STATE_KEY]
    assert state.trained.key == "dp_additive_reg"
    ledger = state.ledger()
    assert (ledger.spent, ledger.spent_delta) == (pytest.approx(0.5), 0.0)
    assert any("Inside the model" in str(h.value) for h in at.subheader)
    assert any("How much each feature moves the prediction" in str(c.value) for c in at.caption)
