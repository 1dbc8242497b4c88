"""The Train page's subsample-and-aggregate students and multiplicative-weights experts, through AppTest."""

from __future__ import annotations

import pytest

from dpstudio.support.session import STATE_KEY


def _state(at):
    return at.session_state[STATE_KEY]


def _train(at, key: str, epsilon: str = "0.5"):
    at.selectbox[0].set_value(key).run()
    at.text_input(key="train_epsilon").set_value(epsilon).run()
    [b for b in at.button if b.label == "Train"][0].click().run()
    assert not at.exception, [e.value for e in at.exception]
    return _state(at).trained


def test_the_new_models_are_offered_with_what_they_spend(app):
    at = app("train")
    options = at.selectbox[0].options
    assert "DP subsample-and-aggregate student (regressor)" in options
    assert "DP experts by multiplicative weights (regressor)" in options
    at.selectbox[0].set_value("dp_sa_student_reg").run()
    assert any("Spends ε once" in str(c.value) for c in at.caption)


def test_a_student_is_trained_and_charged_once(app):
    at = app("train")
    trained = _train(at, "dp_sa_student_reg")
    assert type(trained.model).__name__ == "SubsampleAggregateStudentRegressor"
    assert trained.model.epsilon_spent_ == 0.5 and trained.delta == 0.0
    assert _state(at).ledger().spent == pytest.approx(0.5)
    assert [m.label for m in at.metric] == ["MAE (median_house_value)", "RMSE (median_house_value)"]


def test_experts_in_streaming_form_show_their_weights_path(app):
    at = app("train")
    at.selectbox[0].set_value("dp_experts_reg").run()
    at.selectbox(key="dp_experts_reg_form").set_value("streaming").run()
    trained = _train(at, "dp_experts_reg")
    assert trained.parameters["form"] == "streaming"
    assert len(trained.details["weights_path"]) == 2 * 64
    assert at.get("arrow_vega_lite_chart") or at.get("vega_lite_chart")
    assert _state(at).ledger().spent == pytest.approx(0.5)


def test_the_classifier_student_trains_on_adult(app):
    at = app("data")
    at.selectbox[0].set_value("Adult census income (sample)").run()
    at.switch_page("pages/train.py").run()
    trained = _train(at, "dp_sa_student_clf", "1")
    assert [m.label for m in at.metric] == ["accuracy", "balanced accuracy"]
    assert trained.details["confusion"].shape == (2, 2)


def test_the_compare_page_runs_the_new_models_without_spending(app):
    at = app("compare")
    at.radio[0].set_value("custom").run()
    at.multiselect(key="models_ours_regression").set_value(["dp_sa_student_reg", "dp_experts_reg"]).run()
    at.text_input[0].set_value("1").run()
    at.number_input[0].set_value(2).run()
    [b for b in at.button if b.label == "Run comparison"][0].click().run()
    assert not at.exception, [e.value for e in at.exception]
    frames = [d.value for d in at.dataframe]
    shown = " ".join(str(f.to_csv()) for f in frames)
    assert "subsample-and-aggregate student" in shown and "multiplicative weights" in shown
    assert _state(at).ledger().spent == 0
