"""The owner's verdict on a copy before release (dpcore.release.usefulness)."""

from __future__ import annotations

import math

import pytest

from dpcore import release as R
from dpcore.tables.schema import ColumnSpec, Schema


def test_usefulness_verdicts():
    schema = Schema(
        [
            ColumnSpec("smoker", kind="categorical", categories=["no", "yes"], may_be_missing=False),
            ColumnSpec("score", kind="numeric", lower=0, upper=100),
            ColumnSpec("id", role="identifier", kind="categorical"),
        ]
    )
    noisy = R.ReleasePlan([R.ColumnPlan("smoker", "k-ary", epsilon=0.025, missing="random"), R.ColumnPlan("id")])
    table = R.usefulness(noisy, schema, 1000)
    assert list(table.columns) == ["column", "epsilon", "typical_error", "verdict", "rating"]
    assert table["column"].tolist() == ["smoker"] and table["rating"].tolist() == ["noise"]
    p = math.exp(0.025) / (math.exp(0.025) + 1)
    q = 1 - p
    assert table["typical_error"].iloc[0] == pytest.approx(math.sqrt((0.5 * p * (1 - p) + 0.5 * q * (1 - q)) / 1000) / (p - q))
    verdict = table["verdict"].iloc[0]
    assert "mostly noise" in verdict and "'smoker'" in verdict and "pure noise (its error exceeds ±1)" in verdict
    assert "mostly noise for 'smoker'" in R.usefulness_summary(table)

    useful = R.ReleasePlan([R.ColumnPlan("smoker", "k-ary", epsilon=2.0), R.ColumnPlan("score", "laplace", epsilon=2.0)])
    table = R.usefulness(useful, schema, 30_000)
    assert table["rating"].tolist() == ["useful", "useful"]
    assert table["verdict"].iloc[0].startswith("Useful") and "±0.0025" in table["verdict"].iloc[0]
    assert table["typical_error"].iloc[1] == pytest.approx(math.sqrt(2) * 50 / math.sqrt(30_000))
    assert R.usefulness_summary(table).startswith("Useful")

    mixed = R.ReleasePlan([R.ColumnPlan("smoker", "coin"), R.ColumnPlan("score", "laplace", epsilon=0.05)])
    table = R.usefulness(mixed, schema, 1000)
    assert table["rating"].tolist() == ["useful", "noise"] and "narrow its declared bounds" in table["verdict"].iloc[1]
    summary = R.usefulness_summary(table)
    assert summary.count(".") == 1 and "mostly noise for 'score'" in summary and "useful for the other column" in summary
    assert R.usefulness_summary(R.usefulness(R.ReleasePlan([R.ColumnPlan("id")]), schema, 10)).startswith(
        "The plan randomises no"
    )
    with pytest.raises(ValueError, match="n_rows"):
        R.usefulness(useful, schema, 0)


def test_a_copy_that_is_mostly_noise_is_named_and_needs_the_stated_word():
    import unicodedata

    import pandas as pd

    from dpcore.i18n import language
    from dpcore.release import NOISE_CONFIRMATION, mostly_noise, noise_advice, noise_confirmed

    table = pd.DataFrame({"rating": ["noise", "noise", "rough"]})
    assert mostly_noise(table) and not mostly_noise(pd.DataFrame({"rating": ["noise", "useful"]}))
    assert "2 of its 3" in noise_advice(table) and "synthetic copy" in noise_advice(table)
    assert NOISE_CONFIRMATION == "noise"
    assert noise_confirmed(" NOISE ") and not noise_confirmed("") and not noise_confirmed("yes")
    with language("vi"):  # the Vietnamese word, typed composed or decomposed
        assert noise_confirmed("nhiễu") and noise_confirmed(unicodedata.normalize("NFD", "Nhiễu")) and noise_confirmed("noise")
