"""The privacy report (dpcore.release.report)."""

from __future__ import annotations

import json

import pytest
from release_testing import adult_table

from dpcore import release as R
from dpcore.exceptions import DataError
from dpcore.tables.schema import ColumnSpec, Schema


def test_report_is_complete_and_holds_no_data():
    frame, schema = adult_table()
    schema = Schema([ColumnSpec(**{**c.__dict__}) for c in schema.columns])
    schema["age"].bounds_from_data = True
    plan = R.default_plan(schema)
    assert plan["age"].mechanism == "drop"  # a data-read domain is never released by default
    plan["age"].mechanism, plan["age"].epsilon, plan["age"].bins = "bins", 1.0, 8
    with pytest.raises(DataError, match="read from your data"):
        R.release_table(frame.head(100), schema, plan)
    plan["age"].mechanism = "drop"
    plan["hours-per-week"].mechanism, plan["hours-per-week"].bins = "laplace", None
    result = R.release_table(frame.head(1000), schema, plan, random_state=1)
    report = json.loads(json.dumps(result.report))
    assert report["format"] == "dpcore-release-report/1"
    assert report["per_record_epsilon"] == pytest.approx(plan.per_record_epsilon)
    assert report["unit_of_protection"]["unit"] == "replace-one" and "does not hide **whether**" in result.markdown
    for entry in report["columns"]:
        assert {"column", "header", "mechanism", "epsilon", "estimator", "description"} <= set(entry)
        if entry["mechanism"] == "laplace":
            assert entry["scale"] == pytest.approx(98.0) and "mean" in entry["estimator"]
        else:
            assert {"domain", "keep_probability", "other_probability", "n_categories"} <= set(entry)
            assert "pi_j = (lambda_j - q) / (p - q)" in entry["estimator"]["frequency"]
    assert "fingerprint" not in json.dumps(report) and result.dataset_id is None
    assert "rows" not in report
