"""DP Gaussian Naive Bayes fitted through the backend interface: one pass of exact fixed-point moments."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from dpcore.backends import LocalRows, RowBatch
from dpcore.backends.rows import FIXED_SCALE
from dpcore.mechanisms import record_mechanism_calls
from dpcore.models import DPGaussianNB
from dpcore.models.naive_bayes import _ClassMoments


def _table(n=500, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.random((n, 3)) * 10 - 5
    X[rng.random((n, 3)) < 0.02] = np.nan
    y = np.array(["no", "yes", "maybe"], dtype=object)[rng.integers(0, 3, n)]
    y[:3] = "undeclared"
    return X, y


def _state(model) -> bytes:
    return pickle.dumps({n: getattr(model, n) for n in ("class_count_", "class_prior_", "theta_", "var_", "classes_")})


def test_small_batches_fit_the_same_model_as_one_batch():
    X, y = _table()
    make = lambda: DPGaussianNB(epsilon=2.0, bounds=(-5, 5), classes=["no", "yes", "maybe"], random_state=4)  # noqa: E731
    one = make().fit_rows(LocalRows(X, y))
    many = make().fit_rows(LocalRows(X, y, batch_rows=7))
    assert _state(one) == _state(many)
    assert _state(make().fit(X, y)) == _state(one)


def test_rows_need_declared_classes():
    X, y = _table()
    with pytest.raises(ValueError, match="declared classes"):
        DPGaussianNB().fit_rows(LocalRows(X, y))


def test_moments_are_exact_sums_of_rounded_values():
    """Counts, Σz and Σz² (z = unit − 1/2 rounded to 2^-14, squared after rounding), undeclared labels dropped."""
    X, y = _table(200)
    classes = ["no", "yes", "maybe"]
    with record_mechanism_calls() as recorded:
        DPGaussianNB(epsilon=1.0, bounds=(-5, 5), classes=classes, random_state=0).fit_rows(LocalRows(X, y, batch_rows=9))
    counts, sums, squares = (c.query for c in recorded.calls)
    unit = np.clip(np.nan_to_num((X + 5) / 10, nan=0.5), 0, 1)
    z = np.rint(unit * FIXED_SCALE) / FIXED_SCALE - 0.5
    for c, label in enumerate(classes):
        rows = y == label
        assert counts[c] == rows.sum()
        np.testing.assert_array_equal(sums[c], z[rows].sum(axis=0))  # exact: dyadic values, few rows
        np.testing.assert_array_equal(squares[c], (z[rows] ** 2).sum(axis=0))
    assert counts.sum() == len(y) - 3


def test_rounded_centred_values_keep_the_sensitivities():
    unit = np.array([[0.0, 1.0, 0.5, 1 - 1e-9, 1e-9]])
    moments = _ClassMoments(1, 5)(RowBatch(unit, np.zeros(1, dtype=np.int64), np.zeros(1, dtype=np.uint64)))
    z = moments[1:6] / FIXED_SCALE
    assert np.all(np.abs(z) <= 0.5) and np.all(moments[6:] / FIXED_SCALE**2 <= 0.25)
    assert np.abs(z).sum() <= 5 / 2


def test_an_empty_batch_gives_zero_moments():
    empty = RowBatch(np.zeros((0, 2)), np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.uint64))
    np.testing.assert_array_equal(_ClassMoments(3, 2)(empty), np.zeros(3 + 6 + 6, dtype=np.int64))
