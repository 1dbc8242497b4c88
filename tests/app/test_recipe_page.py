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


def _train(at, model: str, epsilon: str):
    at.switch_page("pages/train.py").run()
    at.selectbox[0].set_value(model).run()
    at.text_input(key="train_epsilon").set_value(epsilon).run()
    [b for b in at.button if b.label == "Train"][0].click().run()
    assert not at.exception


def test_every_model_and_copy_of_the_session_is_saved_in_the_order_released(app):
    at = app("train")
    _train(at, "dp_forest", "0.3")
    _train(at, "dp_tree", "0.2")
    at.switch_page("pages/export.py").run()
    if any(t.key == "noise_confirmation" for t in at.text_input):
        at.text_input(key="noise_confirmation").set_value("noise").run()
    [b for b in at.button if b.label == "Release the copy"][0].click().run()
    [b for b in at.button if b.label == "Release the copy"][0].click().run()  # the same copy handed out again: no release
    assert not at.exception
    at.switch_page("pages/privacy.py").run()
    assert not at.exception
    assert any("It makes 2 model(s), 1 copy(ies) and 0 group map(s) again." in str(m.value) for m in at.markdown)
    state = _state(at)
    recipe = session_recipe(state, state.ledger())
    assert [(m.model, m.epsilon) for m in recipe.models] == [("dp_forest", pytest.approx(0.3)), ("dp_tree", pytest.approx(0.2))]
    [copy] = recipe.copies
    assert copy.kind == "randomized" and copy.plan is not None
    assert recipe_from_dict(yaml.safe_load(recipe.to_yaml())) == recipe
