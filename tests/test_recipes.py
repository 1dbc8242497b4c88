"""Recipes: a session's choices as YAML, checked field by field with a sentence, and their planned costs."""

from __future__ import annotations

import pytest
import yaml
from conftest import SAMPLE_DATA

from dpcore.recipes import (
    CopyStep,
    GroupsStep,
    ModelStep,
    Recipe,
    RecipeError,
    Source,
    load_recipe,
    planned_costs,
    recipe_from_dict,
)
from dpcore.release import copy_epsilon, default_plan
from dpcore.tables.schema import load_schema


@pytest.fixture
def recipe() -> Recipe:
    schema = load_schema(SAMPLE_DATA / "adult.schema.json")
    return Recipe(
        name="adult quarterly",
        source=Source(connection="census", table="adult"),
        schema=schema.to_dict(),
        unit="add/remove",
        total_epsilon=30.0,
        models=[ModelStep("dp_boosting", 0.5), ModelStep("dp_sgd_logistic", 0.4, delta=1e-6, params={"epochs": 3})],
        copies=[
            CopyStep("randomized", plan=default_plan(schema).to_dict()),
            CopyStep("synthetic", epsilon=1.0, delta=1e-7),
            CopyStep("synthetic", epsilon=0.5, method="aim", workload=[["age", "income"], ["age", "sex", "income"]]),
        ],
        groups=[GroupsStep(["age", "hours-per-week"], 0.5, resolution=12)],
    )


def test_a_recipe_reads_back_as_it_was_written(recipe, tmp_path):
    path = tmp_path / "adult.recipe.yaml"
    path.write_text(recipe.to_yaml(), encoding="utf-8")
    assert load_recipe(path) == recipe


def test_the_planned_costs_are_what_each_release_charges_in_the_datasets_unit(recipe):
    schema = load_schema(SAMPLE_DATA / "adult.schema.json")
    costs = planned_costs(recipe, "add/remove")
    assert [c.epsilon for c in costs] == pytest.approx(
        [0.5, 0.4, copy_epsilon(default_plan(schema), "add/remove"), 1.0, 0.5, 0.5]
    )
    assert [c.delta for c in costs] == pytest.approx([0, 1e-6, 0, 1e-7, 1e-6, 0])
    # where one person's values may change, what is private under add/remove counts twice (group privacy)
    doubled = planned_costs(recipe, "replace-one")
    assert doubled[0].epsilon == pytest.approx(1.0) and doubled[-1].epsilon == pytest.approx(1.0)


def _broken(recipe: Recipe, change) -> dict:
    data = yaml.safe_load(recipe.to_yaml())
    change(data)
    return data


@pytest.mark.parametrize(
    ("change", "words"),
    [
        (lambda d: d.update(recipe=7), "'recipe'"),
        (lambda d: d.pop("name"), "'name' must be a text"),
        (lambda d: d["models"][0].update(epsilon="half"), "'models[1].epsilon' must be a number above 0"),
        (lambda d: d["models"][1].update(delta=2), "'models[2].delta' must be a number above 0 and below 1"),
        (lambda d: d["models"][0].update(model="sk_tree_clf"), "'models[1].model' must be a DP model"),
        (lambda d: d["copies"][0].pop("plan"), "'copies[1].plan'"),
        (lambda d: d["copies"][1].update(kind="photocopy"), "'copies[2].kind' must be 'randomized' or 'synthetic'"),
        (lambda d: d["copies"][1].update(method="gan"), "'copies[2].method' must be 'mst' or 'aim'"),
        (lambda d: d["copies"][1].update(workload=[["age", "sex"]]), "'copies[2].workload' must be a list of lists"),
        (lambda d: d["copies"][2].update(workload="age,sex"), "'copies[3].workload' must be a list of lists"),
        (lambda d: d["groups"][0].update(columns=["age"]), "'groups[1].columns' must be a list of 2 to 4"),
        (lambda d: d["privacy"].update(unit="person"), "'privacy.unit'"),
        (lambda d: d.update(seed=3), "'seed' is not one DP Studio knows"),
        (lambda d: d["source"].update(table=None, query=None), "either its 'table' or a 'query'"),
        (lambda d: d["source"].update(file="adult.csv"), "either a 'file' or a 'connection'"),
        (lambda d: d["source"].update(connection="postgresql://owner:hunter2@db/clinic"), "holds a password"),
        (lambda d: d.update(models=[], copies=[], groups=[]), "makes no release"),
        (lambda d: d["schema"]["columns"][0].update(lower=None), "'schema': Column 'age': declare a lower and an upper bound"),
        (lambda d: d["schema"]["columns"][-1].update(role="feature"), "declares no target column"),
    ],
)
def test_a_bad_recipe_gets_a_sentence_naming_its_field(recipe, change, words):
    with pytest.raises(RecipeError) as refused:
        recipe_from_dict(_broken(recipe, change))
    assert words in str(refused.value)
    assert "hunter2" not in str(refused.value)


def test_a_domain_read_from_the_data_never_goes_into_a_recipe(recipe):
    def read(data):
        data["schema"]["columns"][0]["bounds_from_data"] = True

    with pytest.raises(RecipeError, match="read from the data for age"):
        recipe_from_dict(_broken(recipe, read))


def test_a_file_that_is_not_yaml_is_named_with_its_line(tmp_path):
    path = tmp_path / "broken.yaml"
    path.write_text("recipe: 1\nname: [unclosed\n", encoding="utf-8")
    with pytest.raises(RecipeError, match="not valid YAML"):
        load_recipe(path)


def test_a_hand_written_recipe_names_its_schema_plan_and_table_files_beside_it(tmp_path):
    schema = load_schema(SAMPLE_DATA / "adult.schema.json")
    (tmp_path / "adult.schema.json").write_text(schema.to_json(), encoding="utf-8")
    (tmp_path / "plan.json").write_text(default_plan(schema).to_json(), encoding="utf-8")
    text = "recipe: 1\nname: by hand\nsource: {file: adult.csv}\nschema: adult.schema.json\ncopies:\n- plan: plan.json\n"
    (tmp_path / "by_hand.yaml").write_text(text, encoding="utf-8")
    recipe = load_recipe(tmp_path / "by_hand.yaml")
    assert recipe.source.file == str(tmp_path / "adult.csv")
    assert recipe.schema == schema.to_dict() and recipe.copies[0].plan == default_plan(schema).to_dict()
    (tmp_path / "by_hand.yaml").write_text(text.replace("plan.json", "missing.json"), encoding="utf-8")
    with pytest.raises(RecipeError, match="'copies\\[1\\].plan' names the file"):
        load_recipe(tmp_path / "by_hand.yaml")
