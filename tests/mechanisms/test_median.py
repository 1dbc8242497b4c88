"""The DP median (exponential mechanism over the gaps between sorted values).

One median is one Python call (~50 µs), so these tests draw 0.6-2·10⁴ values rather than 10⁵;
the KS and neighbouring tests below still have wide margins at that size. Seeded; ALPHA
(1e-6) is the false-alarm rate on a fresh seed.
"""

from __future__ import annotations

import numpy as np
import pytest
from privacy_testing import ALPHA, assert_exceeds_epsilon, assert_within_epsilon, neighbouring_privacy_loss, run_many
from scipy import stats

from dpcore.mechanisms import Median, record_mechanism_calls

N_DRAWS = 20_000
N_RUNS = 6_000  # per dataset in a neighbouring test
BIN_EDGES = np.linspace(0.0, 1.0, 11)[1:-1]  # ten equal bins of the declared domain [0, 1]


def exact_median_cdf(values, epsilon, lower, upper):
    """The output CDF from the definition: gap i has weight length × exp(−ε|i − n/2|), uniform inside."""
    z = np.sort(np.clip(np.asarray(values, dtype=float), lower, upper))
    n = z.size
    edges = np.concatenate(([lower], z, [upper]))
    weights = np.diff(edges) * np.exp(-epsilon * np.abs(np.arange(n + 1) - n / 2))
    cumulative = np.concatenate(([0.0], np.cumsum(weights) / weights.sum()))
    return lambda x: np.interp(x, edges, cumulative)


def _medians(mech: Median, values, n=N_DRAWS) -> np.ndarray:
    return np.array([mech.randomise(values) for _ in range(n)])


# --- distribution --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("epsilon", "bounds", "values"),
    [
        (1.0, (0.0, 1.0), [0.1, 0.15, 0.4, 0.45, 0.5, 0.8, 0.9]),
        (0.3, (-10.0, 10.0), [-20.0, -3.0, -3.0, 0.0, 1.0, 2.5, 4.0, 50.0]),  # clipped values and a tie
    ],
)
def test_output_follows_the_exact_distribution(epsilon, bounds, values):
    medians = _medians(Median(epsilon, bounds, random_state=51), values)
    cdf = exact_median_cdf(values, epsilon, *bounds)
    # KS at false-alarm rate ALPHA against the CDF computed from the mechanism's definition.
    assert stats.kstest(medians, cdf).pvalue > ALPHA
    if epsilon == 1.0:
        # The same sample is told apart from a median that forgot the gap lengths (power check).
        z = np.sort(values)
        edges = np.concatenate(([0.0], z, [1.0]))
        w = np.exp(-epsilon * np.abs(np.arange(len(z) + 1) - len(z) / 2))
        cumulative = np.concatenate(([0.0], np.cumsum(w) / w.sum()))
        assert stats.kstest(medians, lambda x: np.interp(x, edges, cumulative)).pvalue < ALPHA


def test_no_data_gives_a_uniform_output_over_the_bounds():
    medians = _medians(Median(1.0, (2.0, 5.0), random_state=52), [], n=5_000)
    assert stats.kstest(medians, stats.uniform(loc=2.0, scale=3.0).cdf).pvalue > ALPHA


def test_output_is_always_inside_the_bounds():
    rng = np.random.default_rng(53)
    mech = Median(0.5, (-1.0, 1.0), random_state=54)
    for _ in range(300):
        values = rng.normal(0.0, 5.0, size=rng.integers(0, 20))  # most values far outside
        assert -1.0 <= mech.randomise(values) <= 1.0
    assert -1.0 <= mech.randomise([np.inf, -np.inf, 1e300]) <= 1.0


def test_missing_values_are_dropped_not_passed_through():
    mech = Median(1.0, (0.0, 1.0), random_state=55)
    outputs = [mech.randomise([0.2, np.nan, 0.7]) for _ in range(200)] + [mech.randomise([np.nan])]
    assert np.all(np.isfinite(outputs)) and 0.0 <= min(outputs) and max(outputs) <= 1.0


def test_concentrates_near_the_median_at_large_epsilon():
    values = np.random.default_rng(56).uniform(0.0, 100.0, size=1001)
    true_median = np.median(values)
    sharp = _medians(Median(20.0, (0.0, 100.0), random_state=57), values, n=300)
    # Gaps 8+ ranks away carry weight <= e^-80 each: every draw lies within the 17 central values.
    central = np.sort(values)[500 - 8 : 500 + 9]
    assert np.all((sharp >= central[0]) & (sharp <= central[-1]))
    assert np.max(np.abs(sharp - true_median)) < 5.0
    loose = _medians(Median(0.01, (0.0, 100.0), random_state=58), values, n=300)
    assert np.mean(np.abs(loose - true_median)) > 10 * np.mean(np.abs(sharp - true_median))


# --- neighbouring datasets ----------------------------------------------------------------


class DataBoundsMedian(Median):
    """The classic leak: bounds read from the private data instead of the declared ones."""

    def randomise(self, values):
        values = np.asarray(values, dtype=float)
        self.lower, self.upper = float(values.min()), float(values.max())
        return super().randomise(values)


D = np.array([0.4, 0.45, 0.5, 0.55, 0.6])


def _release(mechanism_class, epsilon):
    """``release(data, rng)`` for the privacy helpers; one mechanism per generator (construction is slow)."""
    made = {}

    def release(data, rng):
        if made.get("rng") is not rng:
            made["rng"], made["mechanism"] = rng, mechanism_class(epsilon, (0.0, 1.0), random_state=rng)
        return made["mechanism"].randomise(data)

    return release


@pytest.mark.parametrize("added", [0.99, 0.5, np.nan])
def test_neighbouring_datasets_stay_within_epsilon(added):
    """One record added: an outlier, a value at the median, or a missing value."""
    epsilon = 0.5
    estimate = neighbouring_privacy_loss(_release(Median, epsilon), D, np.append(D, added), epsilon, N_RUNS, edges=BIN_EDGES)
    assert_within_epsilon(estimate)


def test_neighbouring_test_catches_bounds_read_from_the_data():
    """Reading the bounds from the data leaks the extremes, and the test sees it (power check).

    A doubled ε is not caught on this small pair: the rank utility's sensitivity is 1/2 and
    most of the output mass sits between the same two data points for D and D'."""
    epsilon = 0.5
    estimate = neighbouring_privacy_loss(
        _release(DataBoundsMedian, epsilon), D, np.append(D, 0.99), epsilon, N_RUNS, edges=BIN_EDGES
    )
    assert_exceeds_epsilon(estimate)


# --- parameters ----------------------------------------------------------------------------


@pytest.mark.parametrize("bounds", [(1.0, 1.0), (2.0, 1.0), (0.0, float("inf")), (float("nan"), 1.0)])
def test_bad_bounds_are_a_value_error_naming_bounds(bounds):
    with pytest.raises(ValueError, match="bounds"):
        Median(1.0, bounds)


@pytest.mark.parametrize("bounds", [("low", "high"), (0.0,), 5.0, (0.0, 1.0, 2.0)])
def test_malformed_bounds_are_a_type_error_naming_bounds(bounds):
    with pytest.raises(TypeError, match="bounds"):
        Median(1.0, bounds)


def test_default_bounds_are_the_unit_interval():
    mech = Median(1.0)
    assert (mech.lower, mech.upper) == (0.0, 1.0)
    assert (Median(1.0, None).lower, Median(1.0, None).upper) == (0.0, 1.0)


@pytest.mark.parametrize(
    ("epsilon", "error"),
    [(0, ValueError), (float("nan"), ValueError), (float("inf"), ValueError), ("1", TypeError), (True, TypeError)],
)
def test_bad_epsilon_names_epsilon(epsilon, error):
    with pytest.raises(error, match="epsilon"):
        Median(epsilon)


# --- randomness and recording --------------------------------------------------------------


def test_no_seed_gives_fresh_output_and_same_seed_repeats():
    values = [0.1, 0.5, 0.9]
    assert Median(1.0).randomise(values) != Median(1.0).randomise(values)
    assert Median(1.0, random_state=6).randomise(values) == Median(1.0, random_state=6).randomise(values)
    np.testing.assert_array_equal(
        run_many(_release(Median, 1.0), values, 20, seed=1), run_many(_release(Median, 1.0), values, 20, seed=1)
    )


def test_calls_are_recorded_and_replayed():
    with record_mechanism_calls() as recorder:
        first = Median(0.8, (0.0, 2.0), random_state=1).randomise([0.5, 1.0, 1.5])
    (call,) = recorder.calls
    assert (call.mechanism, call.epsilon, call.sensitivity) == ("median", 0.8, 1.0)
    assert float(call.output) == first
    with record_mechanism_calls(replay=recorder.calls):
        again = Median(0.8, (0.0, 2.0), random_state=2).randomise([0.5, 1.0, 1.5, 1.9])
    assert again == first
