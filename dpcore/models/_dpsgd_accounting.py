"""DP-SGD's privacy accounting and Poisson subsampling, kept apart from the estimators.

A fit releases one noisy row count, then ``steps`` noisy gradient sums, each on a Poisson
sample of the rows, with a rate and a number of steps read off the noisy count. Both noises are
exact discrete Gaussians (:class:`~dpcore.mechanisms.Gaussian`), whose proved property is their
Rényi curve ``ε(α) ≤ α·Δ²/(2σ²)`` (Canonne, Kamath & Steinke 2020), not the continuous
Gaussian's privacy loss distribution. So the accounting uses that curve only:

* the count, unsampled: the Gaussian's curve (``dp_accounting``'s ``GaussianDpEvent``), turned
  into ``(ε_count, δ_count)`` with ``δ_count = COUNT_DELTA_SHARE·δ``;
* the steps, once the count has fixed their rate ``q`` and number ``T``: Zhu & Wang's (2019)
  bound for a Poisson-subsampled mechanism with a given curve, at integer orders
  (:mod:`dpcore.models._subsampled_rdp`), added over the ``T`` steps (Rényi DP composes
  adaptively) and turned into ``(ε − ε_count, δ − δ_count)``;
* the two by basic composition of approximate DP, which holds when the second mechanism is chosen
  after seeing the first's output, as long as its guarantee is the same for every output: it is,
  since σ is calibrated for each ``(q, T)`` to the same ``(ε − ε_count, δ − δ_count)``. Adding the
  count's Rényi curve to the steps' would not be enough, since the steps' curve changes with the
  count; the largest of those curves at each order can convert to more than ε;
* with ``epochs="auto"``, the passes too are read off the noisy count (:func:`choose_schedule`):
  every candidate's σ is calibrated to the same ``(ε − ε_count, δ − δ_count)``, so the argument
  above holds for whichever one the count's output selects.

Every conversion to (ε, δ) is ``dp_accounting``'s (Canonne, Kamath & Steinke 2020, Prop. 12;
Asoodeh et al. 2021). ``dp_accounting``'s own subsampled-Gaussian curve (and its PLD accountant)
is the continuous Gaussian's, which is not proved for the discrete one; it serves only as the
tests' lower reference. All neighbours are add/remove-one.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from functools import lru_cache

import numpy as np

from dpcore.models._subsampled_rdp import gaussian_curve, poisson_subsampled_rdp

#: ``"pld"`` is accepted for settings saved before it was retired, and accounts like ``"rdp"``: a
#: privacy loss distribution of the subsampled *discrete* Gaussian is not derived.
ACCOUNTANTS = ("rdp", "pld")
#: Integer Rényi orders (the subsampled bound holds at integer orders only). Large orders matter only
#: at a large ε; past 256 their gain is below ``ln(1/δ)/255`` and their cost in time is not.
ORDERS = (*range(2, 65), 72, 80, 96, 112, 128, 160, 192, 256)
#: The count is unsampled, so its curve holds at every real order: large ones let its small share of ε convert.
COUNT_ORDERS = (*ORDERS, *np.geomspace(300.0, 1e8, 49).round().tolist())
#: The row count's share of δ, fixed and public (the steps get the rest). A tenth costs the steps
#: ``ln(10/9)/(α − 1)`` in ε, under 0.01 at the orders that matter.
COUNT_DELTA_SHARE = 0.1
#: The passes over the rows ``epochs="auto"`` chooses from: public, and capped by the fixed default it replaced (20).
#: Fractions of a pass matter at the smallest ε, where even one pass leaves Zhu & Wang's floor above the budget.
EPOCH_CHOICES = (0.25, 0.5, 1, 2, 3, 5, 10, 20)
#: ``epochs="auto"`` takes the most passes whose averaged update has at least this share of the best
#: signal-to-noise ratio, i.e. at most twice the least noise variance (see :func:`choose_schedule`).
SIGNAL_TO_NOISE_SHARE = 1 / math.sqrt(2)
#: The calibrations' relative precision on σ, and the noise past which a budget is declared unreachable.
TOLERANCE = 1e-3
MOST_NOISE = 1e6


def _check_accountant(kind: str) -> None:
    if kind not in ACCOUNTANTS:
        raise ValueError(f"accountant must be one of {ACCOUNTANTS}, got {kind!r}")


def _to_epsilon(curve: np.ndarray, delta: float, orders: tuple[float, ...] = ORDERS) -> float:
    import dp_accounting

    return float(dp_accounting.rdp.compute_epsilon(orders, curve, delta)[0])


def count_epsilon(count_noise: float, delta: float) -> float:
    """The noisy count's ε at ``COUNT_DELTA_SHARE·delta``, by its Rényi curve (``dp_accounting``'s Gaussian, sensitivity 1)."""
    import dp_accounting

    ledger = dp_accounting.rdp.RdpAccountant(orders=list(COUNT_ORDERS))
    ledger.compose(dp_accounting.GaussianDpEvent(count_noise))
    return _to_epsilon(ledger.rdp, COUNT_DELTA_SHARE * delta, COUNT_ORDERS)


def steps_epsilon(noise_multiplier: float, sampling_rate: float, steps: int, delta: float) -> float:
    """The steps' ε at ``(1 − COUNT_DELTA_SHARE)·delta``, for a rate and number of steps already fixed."""
    step = poisson_subsampled_rdp(gaussian_curve(noise_multiplier), sampling_rate, ORDERS)
    return _to_epsilon(steps * step, (1.0 - COUNT_DELTA_SHARE) * delta)


def epsilon_of(
    noise_multiplier: float, sampling_rate: float, steps: int, count_noise: float, delta: float, accountant: str = "rdp"
) -> float:
    """The fit's ε at ``delta``: the count's plus the steps' (``accountant`` is checked, and both account alike)."""
    _check_accountant(accountant)
    return count_epsilon(count_noise, delta) + steps_epsilon(noise_multiplier, sampling_rate, steps, delta)


def _least_noise(private: Callable[[float], bool]) -> float:
    """The smallest σ (to :data:`TOLERANCE`) with ``private(σ)``, for a ``private`` that only turns true as σ grows.

    A bisection on ``log σ`` whose answer is the bracket's private end. Raises ``ValueError``
    if even :data:`MOST_NOISE` is not private.
    """
    low, high = 0.5, 1.0
    while not private(high):
        low, high = high, 2.0 * high
        if high > MOST_NOISE:
            raise ValueError("no amount of noise reaches this budget")
    while private(low) and low > 1e-3:
        low, high = low / 2.0, low
    while high / low > 1.0 + TOLERANCE:
        middle = math.sqrt(low * high)
        low, high = (low, middle) if private(middle) else (middle, high)
    return high


@lru_cache(maxsize=256)
def count_noise_for(epsilon: float, delta: float) -> float:
    """σ of the Gaussian row count that alone is ``(epsilon, COUNT_DELTA_SHARE·delta)``-DP by its Rényi curve."""
    return _least_noise(lambda sigma: count_epsilon(sigma, delta) <= epsilon)


@lru_cache(maxsize=256)
def calibrate_noise(
    epsilon: float, delta: float, sampling_rate: float, steps: int, count_noise: float, accountant: str = "rdp"
) -> float:
    """The smallest noise multiplier (to 0.1 %) for which the whole fit is (ε, δ)-DP by :func:`epsilon_of`.

    The count's part does not depend on σ, so this is the least noise for which the steps alone
    are ``(epsilon − ε_count, (1 − COUNT_DELTA_SHARE)·delta)``-DP: the same guarantee whatever
    rate and number of steps the count chose. The answer is the bisection's private end, so
    ``epsilon_of(answer) ≤ epsilon`` always. A function of public settings only, so its answers
    are cached. Raises ``ValueError`` if the count alone spends the budget (it never does with
    the defaults, where it gets a small share of ε).
    """
    _check_accountant(accountant)
    # The library logs every order whose conversion does not apply and skips it (the others still bound ε);
    # the curve it is given is never negative (see _subsampled_rdp), so no order is skipped as a negative divergence.
    logging.getLogger("absl").setLevel(logging.ERROR)
    left = epsilon - count_epsilon(count_noise, delta)
    if left <= 0:
        raise ValueError("the noisy row count alone spends the whole budget; lower count_share")
    return _least_noise(lambda sigma: steps_epsilon(sigma, sampling_rate, steps, delta) <= left)


def signal_to_noise(sampling_rate: float, steps: int, noise_multiplier: float) -> float:
    """``√(T)·q/σ``: the averaged update's signal over its noise, up to the factor ``N̂·‖g‖/clip`` all choices share.

    Over ``T`` steps the gradient sums add up to about ``T·q·N̂`` gradients, and their noise to
    ``σ·clip·√T``; ``√(T)·q = √(epochs·q)``. It is also the inverse standard deviation of the noise
    left in averaged SGD's iterate on a quadratic loss (Polyak–Ruppert), ``∝ σ/(q·N̂·√T)``.
    """
    return math.sqrt(steps) * sampling_rate / noise_multiplier


def choose_schedule(
    epsilon: float,
    delta: float,
    count_noise: float,
    noisy_rows: float,
    sampling: Callable[[float], tuple[float, int]],
    choices: tuple[float, ...] = EPOCH_CHOICES,
    accountant: str = "rdp",
) -> tuple[float, float, int, float]:
    """``(epochs, q, T, σ)``: of ``choices``, the most passes whose signal-to-noise is within a share of the best.

    ``sampling(epochs)`` gives the rate and number of steps the noisy count ``noisy_rows`` sets
    for those passes; σ is calibrated for each (cached), so every candidate is ``(epsilon −
    ε_count, (1 − COUNT_DELTA_SHARE)·delta)``-DP on its own. The choice reads only ``epsilon``,
    ``delta``, the count's public noise, the noisy count and ``sampling`` (a function of the noisy
    count and public settings): post-processing of what the count released, with no privacy
    cost of its own.

    The ratio :func:`signal_to_noise` favours few passes once Zhu & Wang's floor (which grows
    with ``epochs·q²``) dominates σ, and many while σ grows slower than ``√epochs``; it ignores how
    far the optimiser gets, which only more passes help. So candidates within
    :data:`SIGNAL_TO_NOISE_SHARE` of the best (noise variance at most doubled) count as tied, and
    the most passes among them wins — but only among passes whose every step is still mostly
    signal, noise ``σ·clip`` at most the largest gradient sum ``q·N̂·clip``; if no tied candidate
    is, the fewest passes win, since extra steps that are mostly noise walk the model away. So
    where the ratio cannot tell the candidates apart, a table of a single batch keeps the old
    default of 20 passes.
    """
    schedules = []
    for epochs in choices:
        rate, steps = sampling(epochs)
        sigma = calibrate_noise(epsilon, delta, rate, steps, count_noise, accountant)
        schedules.append((epochs, rate, steps, sigma))
    ratios = [signal_to_noise(rate, steps, sigma) for _, rate, steps, sigma in schedules]
    tied = [s for s, ratio in zip(schedules, ratios, strict=True) if ratio >= SIGNAL_TO_NOISE_SHARE * max(ratios)]
    mostly_signal = [s for s in tied if s[3] <= s[1] * max(noisy_rows, 1.0)]
    return max(mostly_signal, key=lambda s: s[0]) if mostly_signal else min(tied, key=lambda s: s[0])


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
