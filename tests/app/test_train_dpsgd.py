"""The Train page's approximate-DP models (DP-SGD): labelled, a δ to choose, refused in words when δ cannot be paid."""

from __future__ import annotations

import pytest

from dpstudio.support.session import STATE_KEY


def _state(at):
    return at.session_state[STATE_KEY]


def _train_button(at):
    return [b for b in at.button if b.label == "Train"][0]


def test_dp_sgd_is_labelled_approximate_and_charges_its_delta(app):
    at = app("train")
    at.selectbox[0].set_value("dp_sgd_linear").run()
    assert any("Approximate DP" in str(w.value) for w in at.warning)
    assert at.text_input(key="train_delta_dp_sgd_linear").value == "1e-06"  # a tenth of the total: room for ten such models
    at.text_input(key="train_epsilon").set_value("0.5").run()
    at.text_input(key="train_delta_dp_sgd_linear").set_value("4e-6").run()
    _train_button(at).click().run()
    assert not at.exception
    trained = _state(at).trained
    assert trained.key == "dp_sgd_linear" and trained.delta == pytest.approx(4e-6)
    ledger = _state(at).ledger()
    assert (ledger.spent, ledger.spent_delta) == (pytest.approx(0.5), pytest.approx(4e-6))
    assert any("(approximate DP) — ε = 0.5, δ = 4e-06 spent" in str(h.value) for h in at.subheader)
    assert any("steps of gradient descent" in str(c.value) for c in at.caption)
    assert any("Inside the model" in str(h.value) for h in at.subheader)


def test_the_passes_are_chosen_unless_the_owner_types_them(app):
    at = app("train")
    at.selectbox[0].set_value("dp_sgd_linear").run()
    epochs = at.number_input(key="dp_sgd_linear_epochs")
    assert epochs.value is None  # empty: the model chooses from ε and the noisy row count
    _train_button(at).click().run()
    assert "epochs" not in _state(at).trained.parameters
    assert any("passes over the rows, chosen from ε and the noisy row count" in str(c.value) for c in at.caption)
    at.number_input(key="dp_sgd_linear_epochs").set_value(2).run()
    _train_button(at).click().run()
    assert not at.exception
    assert _state(at).trained.parameters["epochs"] == 2
    assert any("(2 passes over the rows)" in str(c.value) for c in at.caption)


def test_a_dataset_without_delta_refuses_dp_sgd_in_words(app):
    at = app("train")
    ledger = _state(at).ledger()
    ledger.set_total(ledger.total, 0.0)
    at.selectbox[0].set_value("dp_sgd_linear").run()
    assert any("allows δ = 0 only" in str(e.value) for e in at.error)
    assert _train_button(at).disabled
    at.selectbox[0].set_value("dp_boosting_reg").run()  # a pure ε-DP model is still offered
    assert not _train_button(at).disabled


@pytest.mark.parametrize(("typed", "sentence"), [("abc", "between 0 and 1"), ("0.5", "does not fit")])
def test_an_unusable_delta_is_refused_in_words(app, typed, sentence):
    at = app("train")
    at.selectbox[0].set_value("dp_sgd_linear").run()
    at.text_input(key="train_delta_dp_sgd_linear").set_value(typed).run()
    assert any(sentence in str(e.value) for e in at.error)
    assert _train_button(at).disabled
    assert _state(at).ledger().spends() == []


def test_the_compare_summary_says_when_the_best_model_is_approximate():
    import pandas as pd

    from dpstudio.support.comparing import summary_sentences

    summary = pd.DataFrame(
        [
            {
                "model": "dp_sgd_logistic",
                "name": "DP-SGD logistic regression (approximate DP)",
                "kind": "ours",
                "epsilon": 1.0,
                "metric": "accuracy",
                "mean": 0.84,
                "std": 0.0,
                "runs": 1,
            },
            {
                "model": "dp_gaussian_nb",
                "name": "DP Gaussian Naive Bayes",
                "kind": "ours",
                "epsilon": 1.0,
                "metric": "accuracy",
                "mean": 0.80,
                "std": 0.0,
                "runs": 1,
            },
        ]
    )
    [first] = summary_sentences(summary, "accuracy", "classification")
    assert "approximate DP" in first and "δ = 1e-5" in first


def test_when_all_delta_is_spent_the_page_says_so(app):
    at = app("train")
    _state(at).ledger().spend("earlier approximate release", 0.1, delta=1e-5)
    at.selectbox[0].set_value("dp_sgd_linear").run()
    assert any("Nothing is left of this dataset's δ budget" in str(e.value) for e in at.error)
    assert _train_button(at).disabled
