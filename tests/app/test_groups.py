"""The Groups page through AppTest: find a map (charged once), draw it, compare for free, refuse in sentences."""

from __future__ import annotations

import json

import pytest

from dpstudio.support.session import STATE_KEY

SENTINEL = "SENTINEL-5521"


def state(at):
    return at.session_state[STATE_KEY]


def _button(at, label):
    return next(b for b in at.button if b.label == label)


def _charts(at):
    return [*at.get("arrow_vega_lite_chart"), *at.get("vega_lite_chart")]


def _spec(chart) -> str:
    proto = getattr(chart, "proto", chart)
    return getattr(proto, "spec", "") or json.dumps(getattr(chart, "spec", {}))


def test_the_page_opens_on_the_sample_with_two_columns_chosen(app):
    at = app("groups")
    assert not at.exception
    assert at.multiselect[0].value == ["longitude", "latitude"]
    assert not _button(at, "Find groups").disabled
    assert state(at).ledger().spent == 0


def test_finding_groups_charges_once_and_draws_the_map_and_the_owners_rows(app):
    at = app("groups")
    at.text_input(key="groups_epsilon").set_value("0.4").run()
    _button(at, "Find groups").click().run()
    assert not at.exception, [e.value for e in at.exception]
    ledger = state(at).ledger()
    assert ledger.spent == pytest.approx(0.4) and ledger.spends()[-1].released == "a group map"
    found = at.session_state[STATE_KEY].groups.found
    assert found.features == ["longitude", "latitude"] and found.epsilon == 0.4
    assert any("ε = 0.4 spent" in str(h.value) for h in at.subheader)
    charts = _charts(at)
    assert len(charts) == 2  # the map, and the owner's own rows
    assert "noisy count" in _spec(charts[0])
    assert any("owner's eyes only" in str(m.value) for m in at.markdown)
    labels = [b.label for b in at.get("download_button")]
    assert labels == ["Map (CSV)", "Map (JSON)", "Map card (Markdown)"]
    at.run()  # a rerun shows the same map and charges nothing more
    assert state(at).ledger().spent == pytest.approx(0.4) and len(_charts(at)) == 2


def test_the_comparison_with_the_baselines_costs_nothing(app):
    at = app("groups")
    at.toggle(key="groups_auto").set_value(False).run()
    at.number_input(key="groups_resolution").set_value(30).run()
    _button(at, "Find groups").click().run()
    spent = state(at).ledger().spent
    _button(at, "Compare with k-means and DBSCAN").click().run()
    assert not at.exception
    table = at.session_state[STATE_KEY].groups.comparison
    assert list(table["method"]) == [
        "DP grid density clustering",
        "diffprivlib k-means",
        "scikit-learn k-means",
        "scikit-learn DBSCAN",
    ]
    assert state(at).ledger().spent == spent
    assert at.session_state[STATE_KEY].groups.found.grid == "30 × 30"


def test_three_columns_are_drawn_one_slice_at_a_time(app):
    at = app("groups")
    at.multiselect[0].set_value(["longitude", "latitude", "median_income"]).run()
    _button(at, "Find groups").click().run()
    assert not at.exception
    assert [s.label for s in at.select_slider] == ["Slice of median_income"]
    at.select_slider[0].set_value(0).run()
    assert not at.exception and len(_charts(at)) == 2


@pytest.mark.parametrize(("typed", "words"), [("abc", "must be a number"), ("0", "greater than 0"), ("5", "more than the")])
def test_a_bad_epsilon_is_refused_in_words_and_nothing_is_charged(app, typed, words):
    at = app("groups")
    at.text_input(key="groups_epsilon").set_value(typed).run()
    assert any(words in str(e.value) for e in at.error)
    assert _button(at, "Find groups").disabled and state(at).ledger().spent == 0


def test_a_grid_too_large_is_refused_before_anything_is_charged(app):
    at = app("groups")
    at.multiselect[0].set_value(["longitude", "latitude", "median_income", "housing_median_age"]).run()
    at.toggle(key="groups_auto").set_value(False).run()
    at.number_input(key="groups_resolution").set_value(64).run()
    assert any("coarser resolution" in str(e.value) for e in at.error)
    assert _button(at, "Find groups").disabled and state(at).ledger().spent == 0


def test_the_demo_seed_disables_the_map_downloads(app):
    at = app("groups")
    at.checkbox(key="groups_seeded").check().run()
    _button(at, "Find groups").click().run()
    assert any("do not release" in str(w.value) for w in at.warning)
    assert [b.label for b in at.get("download_button")] == ["Map card (Markdown)"]
    assert _button(at, "Map (CSV) — disabled: demo seed").disabled


def test_columns_read_from_the_data_are_flagged_and_cell_values_never_shown(app):
    at = app("data")
    at.radio(key="data_source").set_value("My own CSV file").run()
    rows = "\n".join(f"{i % 17},{(i * 7) % 23},{SENTINEL if i == 3 else 'x'}" for i in range(60))
    at.file_uploader(key="upload").set_value(("shop.csv", f"age,spend,note\n{rows}\n".encode(), "text/csv")).run()
    at.switch_page("pages/groups.py").run()
    assert not at.exception
    assert any("Cannot leave this screen" in str(e.value) and "'age', 'spend'" in str(e.value) for e in at.error)
    _button(at, "Find groups").click().run()
    # The owner sees the map; its files and card are refused with the one sentence and its ways out (privacy-tests.md row 23).
    assert state(at).groups.found.read_from_data == ["age", "spend"]
    assert any("Cannot leave this screen" in str(e.value) for e in at.error)
    assert at.get("download_button") == [] and _button(at, "Declare them public").disabled
    texts = [str(e.value) for kind in ("error", "warning", "info", "markdown", "caption") for e in getattr(at, kind)]
    texts += [_spec(c) for c in _charts(at)]
    assert not any(SENTINEL in t for t in texts)


def test_a_table_without_two_bounded_numeric_columns_gets_a_sentence(app):
    at = app("groups")
    for column in state(at).dataset.schema.columns:
        column.upper = None
    at.run()
    assert any("at least two numeric columns with declared bounds" in str(e.value) for e in at.error)
    assert not at.exception


def test_a_paid_map_survives_a_reload(app):
    from conftest import APP, APP_TIMEOUT
    from streamlit.testing.v1 import AppTest

    at = app("groups")
    at.text_input(key="groups_epsilon").set_value("0.3").run()
    _button(at, "Find groups").click().run()
    token = at.query_params["workspace"]
    token = token[0] if isinstance(token, list) else token
    reloaded = AppTest.from_file(APP, default_timeout=APP_TIMEOUT)
    reloaded.query_params["workspace"] = token
    reloaded.run()
    reloaded.switch_page("pages/groups.py").run()
    assert not reloaded.exception
    assert any("ε = 0.3 spent" in str(h.value) for h in reloaded.subheader)
    assert state(reloaded).ledger().spent == pytest.approx(0.3)  # shown again, not paid again


def test_a_small_budget_is_said_once_before_the_controls_and_a_spent_one_too(app):
    """Issue 28 item 4: the offered ε is half of what is left, and too little left is said once, at the top."""
    at = app("groups")
    ledger = state(at).ledger()
    ledger.spend("earlier", 0.95)
    at = app("groups")  # a fresh visit: a widget keeps what it held, so the new offer shows in a new session
    little = [w for w in at.warning if "Only ε = 0.05 is left" in str(w.value)]
    assert len(little) == 1 and "Privacy page" in str(little[0].value) and "separate dataset" in str(little[0].value)
    assert at.text_input(key="groups_epsilon").value == "0.025"
    ledger.spend("the rest", 0.05)
    at.run()
    spent = [e for e in at.error if "The budget is spent" in str(e.value)]
    assert len(spent) == 1 and not [t for t in at.text_input if t.key == "groups_epsilon"]
    assert _button(at, "Find groups").disabled


def test_a_map_with_no_group_is_a_stated_outcome_not_a_drawn_map(app, monkeypatch):
    from dpstudio.support import groups_view

    # An empty cell passes the threshold in one grid in twenty, so an unseeded map would fail one run in
    # twenty; demo seed 1 is a draw where no cell passes (the app's own demo seed happens to pass one).
    monkeypatch.setattr(groups_view, "DEMO_SEED", 1)
    at = app("groups")
    at.checkbox(key="groups_seeded").check()
    at.text_input(key="groups_epsilon").set_value("0.0001").run()
    _button(at, "Find groups").click().run()
    assert not at.exception and state(at).ledger().spent == pytest.approx(0.0001)
    assert any("No groups found at ε = 0.0001" in str(i.value) for i in at.info)
    assert not _charts(at)


def test_a_way_out_clicked_where_the_map_is_refused_lets_the_next_map_be_downloaded(app):
    at = app("groups")
    state(at).dataset.schema["longitude"].bounds_from_data = True
    at.run()
    _button(at, "Find groups").click().run()
    assert at.get("download_button") == [] and any("Cannot leave this screen" in str(e.value) for e in at.error)
    at.checkbox(key="groups_vouch_public").check().run()
    _button(at, "Declare them public").click().run()
    assert not state(at).dataset.schema["longitude"].bounds_from_data
    assert not any("Cannot leave this screen" in str(e.value) for e in at.error)  # the map laid over the old bounds is gone
    _button(at, "Find groups").click().run()
    assert [b.label for b in at.get("download_button")] == ["Map (CSV)", "Map (JSON)", "Map card (Markdown)"]
    assert not at.exception
