"""The Train page lets DP choose the model: one sentence on what the choice costs, one charge, the chosen learner named."""

from __future__ import annotations

import pytest

from dpcore.models.choice import CANDIDATES
from dpcore.models.registry import get
from dpstudio.support.session import STATE_KEY


def test_letting_dp_choose_trains_the_better_candidate_and_says_which(app):
    at = app("train")
    at.toggle(key="train_choice").set_value(True).run()
    assert not [s for s in at.selectbox if s.label == "Model"]  # the choice replaces the model list
    assert any("A quarter of ε compares" in str(c.value) for c in at.caption)
    at.text_input(key="train_epsilon").set_value("0.6").run()
    [b for b in at.button if b.label == "Train"][0].click().run()
    assert not at.exception
    state = at.session_state[STATE_KEY]
    assert state.trained.key == "dp_choice_reg"
    chosen = state.trained.details["chosen"]
    assert chosen in CANDIDATES["regression"]
    ledger = state.ledger()
    assert (ledger.spent, ledger.spent_delta) == (pytest.approx(0.6), 0.0)  # one charge: screening, pick and refit
    assert len(ledger.spends()) == 1
    assert any(f"DP chose **{get(chosen).name}**" in str(i.value) for i in at.info)
    assert at.toggle(key="train_choice").value  # after the rerun the page still shows the choice


def test_turning_the_choice_off_brings_the_model_list_back(app):
    at = app("train")
    at.toggle(key="train_choice").set_value(True).run()
    at.toggle(key="train_choice").set_value(False).run()
    models = [s for s in at.selectbox if s.label == "Model"]
    assert models and not any("Let DP choose" in option for option in models[0].options)
