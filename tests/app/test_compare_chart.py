"""The Compare page's chart and default model set (engine side; the browser test looks at the page)."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from dpcore.models.registry import models_for
from dpstudio.support.comparing import DEFAULT_MODELS, comparison_chart

#: What benchmarks/README.md measured as our most accurate model per task (Adult, California, Nursery).
BEST_BY_BENCHMARK = {"regression": "dp_boosting_reg", "classification": "dp_boosting_clf"}


@pytest.mark.parametrize("task", ["regression", "classification"])
def test_the_default_set_includes_the_benchmarks_best_model(task):
    assert BEST_BY_BENCHMARK[task] in DEFAULT_MODELS
    assert BEST_BY_BENCHMARK[task] in {m.key for m in models_for(task)}


@pytest.mark.parametrize("key", ["dp_additive_reg", "dp_additive_clf"])
def test_the_default_set_includes_the_additive_model(key):
    """It wins where boosting loses (benchmarks/README.md §25): small tables of weak additive signals."""
    assert key in DEFAULT_MODELS


def _summary(metric, scores, reference):
    rows = [
        dict(model=model, name=model, metric=metric, epsilon=eps, mean=mean, std=0.004, runs=5, kind="ours")
        for model, by_eps in scores.items()
        for eps, mean in by_eps.items()
    ]
    rows.append(dict(model="sk", name="sk", metric=metric, epsilon=None, mean=reference, std=0.0, runs=5, kind="non-private"))
    return pd.DataFrame(rows)


def _y_scales(chart):
    """Every layer's y scale: they must agree, or Vega-Lite unions them (back to zero)."""
    spec = json.loads(chart.to_json())
    return [layer["encoding"]["y"].get("scale") for layer in spec["layer"]]


def test_an_accuracy_axis_spans_the_scores_not_zero_to_one():
    summary = _summary("accuracy", {"a": {1.0: 0.76, 4.0: 0.80}, "b": {1.0: 0.82, 4.0: 0.84}}, 0.85)
    scales = _y_scales(comparison_chart(summary, "accuracy", ""))
    assert all(scale == scales[0] for scale in scales)
    low, high = scales[0]["domain"]
    assert scales[0]["zero"] is False
    assert 0.70 <= low < 0.76 and 0.85 < high <= 0.9  # 0.76–0.85 fills most of the height


def test_an_error_axis_starts_near_the_best_model_and_ends_near_the_dp_mean():
    summary = _summary("MAE", {"dp_mean": {1.0: 91_000, 4.0: 91_000}, "boost": {1.0: 53_000, 4.0: 48_000}}, 43_000)
    low, high = _y_scales(comparison_chart(summary, "MAE", "$"))[0]["domain"]
    assert 35_000 < low < 43_000 and 91_000 < high < 100_000


def test_published_points_outside_the_sweeps_range_are_left_out():
    summary = _summary("MAE", {"dp_mean": {0.25: 0.19, 16.0: 0.19}}, 0.09)
    published = pd.DataFrame({"epsilon": [0.25, 16.0, 64.0], "mean": [0.2, 0.15, 0.12], "name": ["p"] * 3})
    spec = json.loads(comparison_chart(summary, "MAE", "", published).to_json())
    drawn = [row["epsilon"] for rows in spec["datasets"].values() for row in rows if row.get("name") == "p"]
    assert sorted(drawn) == [0.25, 16.0]
