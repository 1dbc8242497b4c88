"""The release plan and its checks (dpcore.release.plan)."""

from __future__ import annotations

import math

import pytest
from release_testing import adult_table, small_frame, small_schema

from dpcore import release as R
from dpcore.exceptions import DataError
from dpcore.mechanisms import COIN_EPSILON
from dpcore.tables.schema import ColumnSpec, Schema, release_refusal


def test_data_read_domains_are_dropped_by_default_and_refused_until_declared_public():
    schema = Schema(
        [
            ColumnSpec("FullName", kind="categorical", categories=[f"person {i}" for i in range(30)], bounds_from_data=True),
            ColumnSpec("score", kind="numeric", lower=0, upper=10, bounds_from_data=True),
            ColumnSpec("smoker", kind="categorical", categories=["no", "yes"], may_be_missing=False),
        ]
    )
    plan = R.default_plan(schema)
    assert [(c.column, c.mechanism) for c in plan.columns] == [("FullName", "drop"), ("score", "drop"), ("smoker", "coin")]
    forced = R.ReleasePlan([R.ColumnPlan("FullName", "k-ary", 1.0), R.ColumnPlan("score", "bins", 1.0, bins=4)])
    # One sentence, the one every artefact uses, naming both columns and the ways out; no value of theirs.
    assert forced.problems(schema) == [release_refusal(["FullName", "score"])]
    assert "'FullName', 'score'" in release_refusal(["FullName", "score"]) and "person 0" not in release_refusal(["FullName"])
    with pytest.raises(DataError, match="Cannot leave this screen"):
        forced.check(schema)
    schema["score"].bounds_from_data = False  # the owner confirms the bounds are public
    assert R.ReleasePlan([R.ColumnPlan("score", "bins", 1.0, bins=4)]).problems(schema) == []


def test_default_plan_for_adult():
    _, schema = adult_table()
    plan = R.default_plan(schema)
    mechanisms = {c.column: c.mechanism for c in plan.columns}
    assert mechanisms["fnlwgt"] == "drop" and mechanisms["sex"] == "coin" and mechanisms["income"] == "coin"
    assert mechanisms["age"] == "bins" and plan["age"].bins == 8 and mechanisms["workclass"] == "k-ary"
    eps = plan.epsilon_by_column()
    assert "fnlwgt" not in eps and eps["sex"] == COIN_EPSILON and eps["age"] == 1.0
    assert plan.per_record_epsilon == pytest.approx(11 + 2 * math.log(3) + 1, abs=1e-8)  # 12 k-ary/bins columns
    assert R.ReleasePlan.from_json(plan.to_json()) == plan
    assert R.ReleasePlan.from_frame(plan.to_frame()) == plan
    described = R.describe_plan(plan, schema)
    assert len(described) == len(schema.columns) and (described["problem"] == "").all()
    assert "probability 3/4" in described.set_index("column").loc["sex", "what the buyer gets"]


def test_plan_problems():
    schema = small_schema(
        pub=ColumnSpec("pub", kind="categorical", public=True),
        three=ColumnSpec("three", kind="categorical", categories=["a", "b", "c"]),
    )
    bad = R.ReleasePlan(
        [
            R.ColumnPlan("id", "keep"),
            R.ColumnPlan("smoker", "keep"),
            R.ColumnPlan("colour", "k-ary"),
            R.ColumnPlan("score", "k-ary", epsilon=1.0),
            R.ColumnPlan("three", "coin"),
            R.ColumnPlan("nope", "coin"),
            R.ColumnPlan("pub", "shuffle"),
            R.ColumnPlan("colour", "drop"),
        ]
    )
    text = " ".join(bad.problems(schema))
    for fragment in (
        "'id' is an identifier",
        "'smoker' can only be kept",
        "'colour': give a finite ε",
        "'score' is numeric",
        "the coin needs exactly two",
        "'nope' is in the plan but not in the schema",
        "must be one of",
        "more than once",
    ):
        assert fragment in text
    with pytest.raises(DataError):
        R.release_frame(small_frame(5), schema, bad)
    with pytest.raises(DataError, match="releases no column"):
        R.release_frame(small_frame(5), schema, R.ReleasePlan([R.ColumnPlan("id")]))
    with pytest.raises(DataError, match="must be a number"):
        R.ReleasePlan.from_dict({"columns": [{"column": "score", "mechanism": "bins", "epsilon": "lots"}]})
    with pytest.raises(DataError, match="not valid JSON"):
        R.ReleasePlan.from_json("{oops")
    assert R.ReleasePlan([R.ColumnPlan("pub", "keep")]).problems(schema) == []
