"""The Privacy page's 'Save as recipe' through Streamlit's AppTest: what the session released, and nothing of the data."""

from __future__ import annotations

import pytest
import yaml

from dpcore.recipes import recipe_from_dict
from dpstudio.support.recipe_view import session_recipe
from dpstudio.support.session import STATE_KEY


def _state(at):
    return at.session_state[STATE_KEY]


def test_before_any_release_the_page_says_what_to_do_first(app):
    at = app("privacy")
    assert not at.exception
    assert any("Nothing is released on this table yet" in str(i.value) for i in at.info)


def test_a_trained_model_is_saved_as_a_recipe_with_its_settings_and_no_data(app):
    at = app("train")
    at.selectbox[0].set_value("dp_forest").run()
    at.text_input(key="train_epsilon").set_value("0.3").run()
    [b for b in at.button if b.label == "Train"][0].click().run()
    at.switch_page("pages/privacy.py").run()
    assert not at.exception
    assert any("It makes 1 model(s), 0 copy(ies) and 0 group map(s) again." in str(m.value) for m in at.markdown)
    state = _state(at)
    recipe = session_recipe(state, state.ledger())
    [model] = recipe.models
    assert model.model == "dp_forest" and model.epsilon == pytest.approx(0.3) and model.encoding == "ordinal"
    assert recipe.source.file == "california_housing.csv" and recipe.total_epsilon == state.ledger().total
    text = recipe.to_yaml()
    assert recipe_from_dict(yaml.safe_load(text)) == recipe  # what `dpcore run` reads back
    # No row of the table: the first rows' values of a column with many distinct values never appear.
    frame = state.dataset.frame
    assert not any(f": {value}\n" in text for value in frame["median_income"].head(20).astype(str))
