"""DP-SGD's privacy accounting and Poisson subsampling, kept apart from the estimators.

A fit releases one noisy row count, then ``steps`` noisy gradient sums, each on a Poisson
sample of the rows. Both noises are exact discrete Gaussians (:class:`~dpcore.mechanisms.Gaussian`),
whose proved property is their Rényi curve ``ε(α) ≤ α·Δ²/(2σ²)`` (Canonne, Kamath & Steinke 2020),
not the continuous Gaussian's privacy loss distribution. So the accounting uses that curve only:

* the count, unsubsampled: ``α/(2σ_count²)``, the Gaussian's curve, computed by Google's
  ``dp_accounting`` (its ``GaussianDpEvent``);
* each step: Zhu & Wang's (2019) bound for a Poisson-subsampled mechanism with a given curve,
  at integer orders (:mod:`dpcore.models._subsampled_rdp`), valid for the discrete Gaussian;
* their sum over the count and the ``steps`` steps (RDP composes by adding, adaptively), turned
  into ``(ε, δ)`` by ``dp_accounting``'s conversion (Canonne, Kamath & Steinke 2020, Prop. 12;
  Asoodeh et al. 2021).

``dp_accounting``'s own subsampled-Gaussian curve (and its PLD accountant) is the continuous
Gaussian's, which is not proved for the discrete one; it serves only as the test's lower
reference. All neighbours are add/remove-one.
"""

from __future__ import annotations

import logging
import math
from functools import lru_cache

import numpy as np

from dpcore.models._subsampled_rdp import gaussian_curve, poisson_subsampled_rdp

#: ``"pld"`` is accepted for settings saved before it was retired, and accounts like ``"rdp"``: a
#: privacy loss distribution of the subsampled *discrete* Gaussian is not derived.
ACCOUNTANTS = ("rdp", "pld")
#: Integer Rényi orders (the subsampled bound holds at integer orders only). Large orders matter only
#: at a large ε; past 256 their gain is below ``ln(1/δ)/255`` and their cost in time is not.
ORDERS = (*range(2, 65), 72, 80, 96, 112, 128, 160, 192, 256)
#: The calibration's relative precision on σ, and the noise past which a budget is declared unreachable.
TOLERANCE = 1e-3
MOST_NOISE = 1e6


def _check_accountant(kind: str) -> None:
    if kind not in ACCOUNTANTS:
        raise ValueError(f"accountant must be one of {ACCOUNTANTS}, got {kind!r}")


@lru_cache(maxsize=256)
def _count_rdp(count_noise: float) -> np.ndarray:
    """The noisy count's Rényi curve at :data:`ORDERS`, by ``dp_accounting`` (unsubsampled Gaussian, sensitivity 1)."""
    import dp_accounting

    ledger = dp_accounting.rdp.RdpAccountant(orders=list(ORDERS))
    ledger.compose(dp_accounting.GaussianDpEvent(count_noise))
    return np.asarray(ledger.rdp, dtype=float)


def fit_rdp(noise_multiplier: float, sampling_rate: float, steps: int, count_noise: float) -> np.ndarray:
    """The whole fit's Rényi curve at :data:`ORDERS`: the count plus ``steps`` subsampled steps."""
    step = poisson_subsampled_rdp(gaussian_curve(noise_multiplier), sampling_rate, ORDERS)
    return _count_rdp(count_noise) + steps * step


def epsilon_of(
    noise_multiplier: float, sampling_rate: float, steps: int, count_noise: float, delta: float, accountant: str = "rdp"
) -> float:
    """The ε at ``delta`` of a fit with these settings (``accountant`` is checked, and both account alike)."""
    import dp_accounting

    _check_accountant(accountant)
    curve = fit_rdp(noise_multiplier, sampling_rate, steps, count_noise)
    return float(dp_accounting.rdp.compute_epsilon(ORDERS, curve, delta)[0])


@lru_cache(maxsize=256)
def count_noise_for(epsilon: float, delta: float) -> float:
    """σ of the Gaussian row count that alone would be (ε, δ)-DP (analytic Gaussian, Balle & Wang 2018)."""
    import dp_accounting

    return float(dp_accounting.get_sigma_gaussian(epsilon, delta))


@lru_cache(maxsize=256)
def calibrate_noise(
    epsilon: float, delta: float, sampling_rate: float, steps: int, count_noise: float, accountant: str = "rdp"
) -> float:
    """The smallest noise multiplier (to 0.1 %) for which the whole fit is (ε, δ)-DP by :func:`epsilon_of`.

    A bisection on ``log σ`` (ε only falls as σ grows); the answer is the bracket's private end,
    so ``epsilon_of(answer) ≤ epsilon`` always. A function of public settings only, so its
    answers are cached. Raises ``ValueError`` if even the count alone spends the budget (it
    never does with the defaults, where it gets a small share of ε).
    """
    import dp_accounting

    _check_accountant(accountant)
    # The library logs every order whose conversion it skips; skipping one only loosens the bound.
    logging.getLogger("absl").setLevel(logging.ERROR)
    unreachable = ValueError("the noisy row count alone spends the whole budget; lower count_share")
    if dp_accounting.get_epsilon_gaussian(count_noise, delta) >= epsilon:
        raise unreachable

    def private(sigma: float) -> bool:
        return epsilon_of(sigma, sampling_rate, steps, count_noise, delta) <= epsilon

    low, high = 0.5, 1.0
    while not private(high):
        low, high = high, 2.0 * high
        if high > MOST_NOISE:
            raise unreachable
    while private(low) and low > 1e-3:
        low, high = low / 2.0, low
    while high / low > 1.0 + TOLERANCE:
        middle = math.sqrt(low * high)
        low, high = (low, middle) if private(middle) else (middle, high)
    return high


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
