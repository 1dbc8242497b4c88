"""DP-SGD's privacy accounting and Poisson subsampling, kept apart from the estimators.

The accounting is Google's ``dp_accounting`` (never a hand-written moments bound): one
Gaussian noisy row count, then ``steps`` Poisson-subsampled Gaussian steps, composed by the
RDP accountant (Mironov 2017; Mironov, Talwar & Zhang 2019) or the PLD accountant
(Meiser & Mohammadi 2018; Doroshenko et al. 2022), both for add/remove-one neighbours.
"""

from __future__ import annotations

import logging
import math
from functools import lru_cache

import numpy as np

ACCOUNTANTS = ("rdp", "pld")
#: Rényi orders for the RDP accountant: fractional ones matter at small ε, large ones at large ε. Any
#: set of orders gives a valid bound; this one is shorter than the library's default (a faster fit).
#: With a sampling rate above ``FRACTIONAL_UP_TO`` the library's series for fractional orders
#: converges slowly, so only whole orders are used there.
WHOLE_ORDERS = (*range(2, 33), 40, 48, 64, 96, 128, 256, 512, 1024)
FRACTIONAL_ORDERS = (*(1 + i / 8 for i in range(1, 8)), *(2 + i / 4 for i in range(1, 4)), *(3 + i / 2 for i in range(1, 14)))
FRACTIONAL_UP_TO = 0.2


def _accountant(kind: str, sampling_rate: float = 0.0):  # type: ignore[no-untyped-def]
    import dp_accounting

    if kind == "rdp":
        orders = sorted({*WHOLE_ORDERS, *(FRACTIONAL_ORDERS if sampling_rate <= FRACTIONAL_UP_TO else ())})
        return dp_accounting.rdp.RdpAccountant(orders=orders)
    if kind == "pld":
        return dp_accounting.pld.PLDAccountant(value_discretization_interval=1e-3)
    raise ValueError(f"accountant must be one of {ACCOUNTANTS}, got {kind!r}")


def training_event(noise_multiplier: float, sampling_rate: float, steps: int, count_noise: float):  # type: ignore[no-untyped-def]
    """The whole fit as one ``DpEvent``: the noisy count, then ``steps`` subsampled Gaussian steps."""
    import dp_accounting

    step = dp_accounting.PoissonSampledDpEvent(sampling_rate, dp_accounting.GaussianDpEvent(noise_multiplier))
    return dp_accounting.ComposedDpEvent(
        [
            dp_accounting.GaussianDpEvent(count_noise),
            dp_accounting.SelfComposedDpEvent(step, steps),
        ]
    )


def epsilon_of(
    noise_multiplier: float, sampling_rate: float, steps: int, count_noise: float, delta: float, accountant: str = "rdp"
) -> float:
    """The ε at ``delta`` of a fit with these settings, by the chosen accountant."""
    ledger = _accountant(accountant, sampling_rate)
    ledger.compose(training_event(noise_multiplier, sampling_rate, steps, count_noise))
    return float(ledger.get_epsilon(delta))


@lru_cache(maxsize=256)
def count_noise_for(epsilon: float, delta: float) -> float:
    """σ of the Gaussian row count that alone would be (ε, δ)-DP (analytic Gaussian, Balle & Wang 2018)."""
    import dp_accounting

    return float(dp_accounting.get_sigma_gaussian(epsilon, delta))


@lru_cache(maxsize=256)
def calibrate_noise(
    epsilon: float, delta: float, sampling_rate: float, steps: int, count_noise: float, accountant: str = "rdp"
) -> float:
    """The smallest noise multiplier (to 0.1 %) for which the whole fit is (ε, δ)-DP.

    A function of public settings only, so its answers are cached. Raises ``ValueError`` if
    even the count alone spends the budget (it never does with the defaults, where it gets a
    small share of ε).
    """
    import dp_accounting

    # The library logs every order it drops as unconverged; dropping one only loosens the bound.
    logging.getLogger("absl").setLevel(logging.ERROR)
    if dp_accounting.get_epsilon_gaussian(count_noise, delta) >= epsilon:
        raise ValueError("the noisy row count alone spends the whole budget; lower count_share")
    bracket: dp_accounting.mechanism_calibration.BracketInterval = dp_accounting.LowerEndpointAndGuess(1e-3, 1.0)
    if accountant == "pld":
        # The PLD of a nearly noiseless step is enormous: search below the RDP answer, which is
        # always enough noise (RDP's bound is the looser one), and keep it if the search fails.
        enough = calibrate_noise(epsilon, delta, sampling_rate, steps, count_noise, "rdp")
        bracket = dp_accounting.ExplicitBracketInterval(0.5 * enough, enough)
        if epsilon_of(0.5 * enough, sampling_rate, steps, count_noise, delta, accountant) <= epsilon:
            return 0.5 * enough
    sigma = float(
        dp_accounting.calibrate_dp_mechanism(
            lambda: _accountant(accountant, sampling_rate),
            lambda s: training_event(s, sampling_rate, steps, count_noise),
            epsilon,
            delta,
            bracket,
            tol=1e-3,
        )
    )
    # The search returns the noise on the private side of its bracket; checked, never assumed.
    while epsilon_of(sigma, sampling_rate, steps, count_noise, delta, accountant) > epsilon:
        sigma *= 1.001
    return sigma


def poisson_batches(rng: np.random.Generator, n: int, steps: int, sampling_rate: float) -> list[np.ndarray]:
    """Each step's batch: every (record, step) pair drawn independently with probability ``sampling_rate``.

    The pairs are laid out record by record (position ``record·steps + step``) and the chosen
    positions found by geometric jumps, so the work grows with the batches, not with
    ``n × steps``. A record appended to the table adds positions at the end only: the other
    records' draws are the same, which couples a fit on D with one on D plus a record (the
    call-recording audit relies on it).
    """
    if sampling_rate >= 1.0:
        every = np.arange(n)
        return [every] * steps
    total = n * steps
    chosen: list[np.ndarray] = []
    last = -1
    chunk = 1 << 16
    while last < total - 1:
        positions = last + np.cumsum(rng.geometric(sampling_rate, size=chunk))
        last = int(positions[-1])
        chosen.append(positions[positions < total])
    positions = np.concatenate(chosen) if chosen else np.zeros(0, dtype=np.int64)
    records, step = np.divmod(positions, steps)
    order = np.argsort(step, kind="stable")
    edges = np.searchsorted(step[order], np.arange(steps + 1))
    records = records[order]
    return [records[edges[t] : edges[t + 1]] for t in range(steps)]


def steps_for(epochs: float, sampling_rate: float, max_steps: int) -> int:
    """⌈epochs / q⌉ steps, at most ``max_steps`` (a public cap on the fit's time)."""
    return int(min(max_steps, max(1, math.ceil(epochs / sampling_rate - 1e-9))))
