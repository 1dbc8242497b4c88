"""Parameter checks: TypeError for a wrong type, ValueError for a wrong value, each naming the parameter."""

from __future__ import annotations

import math
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest

from dpcore.validation import (
    check_bounds,
    check_delta,
    check_epsilon,
    check_positive_int,
    check_random_state,
    check_sensitivity,
    epsilon_decimal,
    round_up_epsilon,
)

BAD_NUMBER_VALUES = [0, 0.0, -0.0, -1, -1e-300, float("nan"), float("inf"), float("-inf")]


# --- epsilon -------------------------------------------------------------------------------


@pytest.mark.parametrize("value", BAD_NUMBER_VALUES)
def test_epsilon_bad_value(value):
    with pytest.raises(ValueError, match="epsilon"):
        check_epsilon(value)


@pytest.mark.parametrize("value", ["1", "nan", None, True, False, [1.0], (1.0,), 1j, {"epsilon": 1}])
def test_epsilon_bad_type(value):
    with pytest.raises(TypeError, match="epsilon"):
        check_epsilon(value)


def test_epsilon_error_uses_the_given_name():
    with pytest.raises(ValueError, match="total_epsilon"):
        check_epsilon(-1, "total_epsilon")
    with pytest.raises(TypeError, match="eps_split"):
        check_epsilon("x", "eps_split")


@pytest.mark.parametrize("value", [1, 0.5, 1e-9, 1e6, np.float64(0.25), np.float32(2.0), np.int64(3), Fraction(1, 3)])
def test_epsilon_good_values_become_floats(value):
    out = check_epsilon(value)
    assert isinstance(out, float) and out == pytest.approx(float(value))


# --- delta, sensitivity, integers ------------------------------------------------------------


@pytest.mark.parametrize("value", [-1e-12, 1.0, 1.5, float("nan"), float("inf")])
def test_delta_outside_zero_one_is_a_value_error(value):
    with pytest.raises(ValueError, match="delta"):
        check_delta(value)


@pytest.mark.parametrize("value", ["0.1", None, True])
def test_delta_bad_type(value):
    with pytest.raises(TypeError, match="delta"):
        check_delta(value)


def test_delta_good_values():
    assert check_delta(0) == 0.0
    assert check_delta(1e-6) == 1e-6


@pytest.mark.parametrize(
    ("value", "error"),
    [(-1, ValueError), (float("nan"), ValueError), (float("inf"), ValueError), ("1", TypeError), (False, TypeError)],
)
def test_sensitivity_bad(value, error):
    with pytest.raises(error, match="sensitivity"):
        check_sensitivity(value)


def test_sensitivity_zero_is_allowed():
    assert check_sensitivity(0) == 0.0


@pytest.mark.parametrize(
    ("value", "error"),
    [(1, ValueError), (-2, ValueError), (2.0, TypeError), (2.5, TypeError), (True, TypeError), ("3", TypeError)],
)
def test_positive_int_with_minimum_two(value, error):
    with pytest.raises(error, match="n_categories"):
        check_positive_int(value, "n_categories", minimum=2)


def test_positive_int_good():
    assert check_positive_int(np.int32(4), "k", minimum=2) == 4
    assert type(check_positive_int(np.int32(4), "k")) is int


# --- bounds ----------------------------------------------------------------------------------


@pytest.mark.parametrize("bounds", [(1.0, 1.0), (2.0, 1.0), ([0.0, 5.0], [1.0, 5.0]), (0.0, float("nan")), (-np.inf, 0.0)])
def test_bounds_with_lower_not_below_upper_or_not_finite(bounds):
    with pytest.raises(ValueError, match="bounds"):
        check_bounds(bounds)


@pytest.mark.parametrize("bounds", [("a", "b"), 1.0, (1.0,), (1.0, 2.0, 3.0), ([1.0, "x"], [2.0, 3.0])])
def test_malformed_bounds(bounds):
    with pytest.raises(TypeError, match="bounds"):
        check_bounds(bounds)


def test_bounds_broadcast_and_per_feature():
    lower, upper = check_bounds((0, 1), n_features=3)
    np.testing.assert_array_equal(lower, [0.0, 0.0, 0.0])
    np.testing.assert_array_equal(upper, [1.0, 1.0, 1.0])
    lower, upper = check_bounds(([0, -1], [1, 1]), n_features=2)
    np.testing.assert_array_equal(lower, [0.0, -1.0])
    with pytest.raises(ValueError, match="one lower and one upper bound per feature"):
        check_bounds(([0, 0, 0], [1, 1, 1]), n_features=2)
    lower, upper = check_bounds(None, 2)
    np.testing.assert_array_equal(upper, [1.0, 1.0])


def test_bounds_error_names_the_parameter_given():
    with pytest.raises(ValueError, match="target_bounds"):
        check_bounds((3, 2), name="target_bounds")


# --- random state --------------------------------------------------------------------------


def test_random_state():
    rng = np.random.default_rng(0)
    assert check_random_state(rng) is rng
    assert check_random_state(5).random() == np.random.default_rng(5).random()
    assert check_random_state(np.int64(5)).random() == np.random.default_rng(5).random()
    assert check_random_state(None).random() != check_random_state(None).random()
    for bad in ("0", 1.0, True, np.random.RandomState(0)):
        with pytest.raises(TypeError, match="random_state"):
            check_random_state(bad)


# --- conservative ε arithmetic -----------------------------------------------------------------


def test_round_up_never_returns_less_than_its_input():
    rng = np.random.default_rng(61)
    values = np.concatenate(
        [
            10.0 ** rng.uniform(-12, 6, size=20_000),
            rng.uniform(0, 10, size=20_000),
            np.nextafter(np.round(rng.uniform(0, 10, size=5_000), 9), np.inf),
            [1e-9, 1e-10, 0.1, 0.2, 0.7, 1 / 3, 2 / 3, math.log(3), 5e-324, 1e6 + 1e-10],
        ]
    )
    for value in values:
        assert round_up_epsilon(value) >= value


def test_round_up_keeps_short_decimals_and_rounds_the_rest_up():
    assert round_up_epsilon(0.1) == 0.1
    assert round_up_epsilon(0.25) == 0.25
    assert round_up_epsilon(1 / 3) == 0.333333334
    assert round_up_epsilon(1e-12) == 1e-9
    assert round_up_epsilon(math.log(3)) == 1.098612289
    assert round_up_epsilon(0.1234567891, digits=3) == 0.124


def test_epsilon_decimal_is_exact_for_short_decimals():
    assert epsilon_decimal(0.1) + epsilon_decimal(0.2) + epsilon_decimal(0.7) == Decimal(1)
    assert epsilon_decimal(0.1) * 10 == Decimal(1)
    assert epsilon_decimal(2 / 3) == Decimal("0.666666667")
