"""The Attack page through Streamlit's AppTest: each attack runs, says what it found, draws its chart, and spends nothing."""

from __future__ import annotations

import pytest

from dpstudio.support.session import STATE_KEY


def state(at):
    return at.session_state[STATE_KEY]


def texts(at) -> str:
    return " ".join(str(m.value) for kind in ("markdown", "info", "caption", "error", "warning") for m in getattr(at, kind))


def charts(at) -> list:
    return list(at.get("arrow_vega_lite_chart")) + list(at.get("vega_lite_chart"))


def click(at, label: str):
    [b for b in at.button if b.label == label][0].click().run()
    assert not at.exception, [e.value for e in at.exception]
    return at


@pytest.fixture
def attack_page(app):
    at = app("attack")
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_the_page_says_it_is_for_the_owners_eyes_only_and_spends_nothing(attack_page):
    text = texts(attack_page)
    assert "Owner's eyes only" in text and "no privacy budget" in text
    assert [t.label for t in attack_page.tabs] == [
        "Who was in the training data?",
        "Who was in a synthetic copy?",
        "Guessing values back from the copy",
        "Does a model keep its promise?",
    ]
    assert not charts(attack_page)


def test_the_quick_membership_attack_draws_the_roc_chart_and_charges_no_budget(attack_page):
    at = click(attack_page, "Run the attack")
    assert charts(at), "no ROC chart"
    text = texts(at)
    assert "Without DP (scikit-learn decision tree), the attacker spotted" in text
    assert "The guarantee: at ε = 1 no attacker" in text
    result = at.session_state[STATE_KEY].attacks.membership
    assert result is not None
    assert [m.private for m in result.models] == [False, True]
    assert state(at).ledger().spent == 0
    assert not [b for b in at.get("download_button") if b.proto.label.startswith("Download the summary")][0].proto.disabled


def test_the_log_scale_and_a_rerun_keep_the_result(attack_page):
    at = click(attack_page, "Run the attack")
    first = at.session_state[STATE_KEY].attacks.membership
    at.checkbox(key="attack_log").check().run()
    assert not at.exception and charts(at)
    assert at.session_state[STATE_KEY].attacks.membership is first


def test_reconstruction_compares_the_copy_with_its_guarantee(attack_page):
    at = click(attack_page, "Guess the values back")
    result = at.session_state[STATE_KEY].attacks.reconstruction
    # Columns whose measured cost would not fit in the quick setting's time limit are left out, and named.
    assert result is not None and (len(result.columns) == 10 or any("columns were attacked" in n for n in result.notes))
    assert "From the copy alone an attacker guesses" in texts(at)
    assert not any(c.exceeds_ceiling for c in result.columns)
    assert state(at).ledger().spent == 0


def test_the_quick_audit_reports_a_lower_bound_and_its_controls(attack_page):
    at = click(attack_page, "Audit the model")
    result = at.session_state[STATE_KEY].attacks.audit
    assert result is not None and result.passed and len(result.controls) == 3
    text = texts(at)
    assert "The data prove a privacy loss of at least" in text and "What this audit could detect" in text
    assert [run.model_epsilon for run in result.controls] == [10.0, 10.0, 10.0]
    assert [run.of_model for run in result.controls] == [True, True, False]  # the DP mean: a check of the audit's size
    assert len({run.n_runs for run in (result.model, *result.controls)}) == 1  # every variant ran as many times
    assert result.conclusive or "This audit was too small to tell" in text
    assert state(at).ledger().spent == 0


def test_incomplete_declarations_are_a_sentence(app):
    at = app()
    state(at).dataset.schema["median_house_value"].role = "feature"  # no target left
    at.switch_page("pages/attack.py").run()
    assert not at.exception
    assert any("declarations are not complete" in str(e.value) for e in at.error)
