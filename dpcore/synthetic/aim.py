r"""AIM: a workload-adaptive synthetic copy (McKenna, Mullins, Sheldon & Miklau, VLDB 2022).

Where MST measures a fixed plan (every column, a tree of pairs), AIM spends its budget round by
round on the marginal its current model gets most wrong, among those of a **workload** the copy
should answer well: by default every pair of columns and, when the schema declares a target, every
triple holding the target (what a buyer training a model of the target needs); an owner who knows
what the buyer will study declares the workload instead (pairs and triples of columns).

The algorithm (spec §12)
------------------------
1. Every column's one-way marginal is measured with Gaussian noise; Private-PGM (``mbi``) fits a
   model to them.
2. Each round picks :data:`PICKS_PER_ROUND` marginals: among the **candidates** (the workload's cliques and every subset of them, weighted
   by how many workload columns each shares, :func:`candidates`) whose model would stay under the
   size cap, the exponential mechanism picks the one with the largest (then the next among those not
   yet picked, each pick its own mechanism and charge)
   ``w_r (‖M_r(D) − M_r(model)‖₁ − √(2/π) σ n_r)``: the model's error on it beyond what noise of
   ``σ`` over its ``n_r`` cells would leave anyway. The chosen marginals are measured with Gaussian
   noise and the model refitted once (warm-started): a round's cost is mostly compiling the refit,
   so four picks a round buy more measurements in the same wait (on Adult: 27 marginals in 45 CPU s
   against 22 in 70 with one pick a round, the same errors).
3. **Annealing**: when the refitted model moved less on a round's first pick than its noise
   (``‖new − old‖₁ ≤ √(2/π) σ n_r``), σ is halved and the selection's ε doubled for later rounds.
4. When what is left of ρ cannot pay a round and one pick more, or the round cap or the time
   budget is reached, the last round picks up to :data:`LAST_BATCH` marginals (as many as what is
   left would have paid) with what is left shared equally. The copy is drawn from the final model.

Privacy argument
----------------
zCDP adds up. Of the budget ρ (from the owner's (ε, δ), ``ε = ρ + 2√(ρ ln 1/δ)``, as MST) the d
one-way measurements take :data:`ONE_WAY_SHARE`; the rest ``ρ'`` is shared by ``T = min(16 d,``
:data:`NOMINAL_PICKS` ``)`` nominal picks, each pick's share 0.9 to the measurement
(``σ = Δ₂/√(2·0.9ρ'/T)``) and 0.1 to the selection (``ε₀ = √(8·0.1ρ'/T)``, the exponential
mechanism being ε₀²/8-zCDP, Cesar & Rogers 2021). Every measurement is charged ``Δ₂²/(2σ²)`` and every selection ``ε₀²/8`` *before* it runs, and
the last round takes exactly what is left, so the sum is ρ (the audit in tests/synthetic checks
it call by call). The selection's utility moves by at most ``w_r Δ₁`` when one person's rows
change, so the mechanism gets the largest weight times Δ₁ as its sensitivity. Sensitivities, the
privacy unit (``k`` rows per person), the declared domain and the noisy row count are MST's
(:mod:`dpcore.synthetic`). The candidate set, the weights, the size cap and the round and time
caps are fixed before the data are seen; which candidates fit under the cap and when to anneal
depend on the model only (post-processing of earlier noisy answers), and a round's scores read the
model through rows drawn from it with the copy's own randomness. Stopping early for time changes
no charge: the last round still spends what is left.

Defaults (chosen on Adult, 32,561 rows × 14 columns with 8-bin numbers, on a shared 2-core machine;
sized for a wide table of 80 columns × 2,700 rows, where AIM was not yet timed end to end)
-------------------------------------------------------------------------------------------------
Each round costs a refit and a draw, each compiling JAX programs for the grown model: 7–10 s of wall
clock per round on Adult on a busy machine, so the paper's nominal ``16 d`` rounds (224 on Adult,
1,280 on 80 columns) would take an hour. :data:`NOMINAL_PICKS` (32 nominal picks, each then worth
``1/32`` of what the one-way marginals leave, about MST's 26 pairs on Adult), :data:`MAX_ROUNDS` (8) and
:data:`TIME_BUDGET` (60 s of rounds) bound the wait; when either runs out with budget left, the last round measures a batch
(:data:`LAST_BATCH`). :data:`ONE_WAY_SHARE` (a fifth) keeps the one-way marginals nearly as precise as
MST's (a quarter there). :data:`MAX_MODEL_MB` caps the model (AIM's paper: 80 MB on a server; 4 MB keeps the refits
and the draw in seconds and still holds every target triple of Adult). Each round's refit runs at
most :data:`ROUND_ITERATIONS` mirror-descent steps (warm-started), the final fit
:data:`~dpcore.synthetic.model.ITERATIONS`, each stopped earlier by the fit's convergence test
(:data:`~dpcore.synthetic.model.TOLERANCE`). Every candidate is read from
:data:`SCORING_ROWS` rows drawn from the model, fewer for many candidates (:data:`SCORING_CELLS`).
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpcore.exceptions import DataError
from dpcore.i18n import _
from dpcore.mechanisms import Exponential, Gaussian
from dpcore.progress import Stage, TimeLeft
from dpcore.synthetic.budget import Calibration
from dpcore.synthetic.measure import Measurement, marginal
from dpcore.synthetic.model import draw, estimate, names, private_pgm

#: Nominal rounds per column (AIM's paper), capped by :data:`NOMINAL_PICKS`: sets the picks' σ and ε₀ before annealing.
ROUNDS_PER_COLUMN = 16
#: The most rounds run, the last included.
MAX_ROUNDS = 8
#: Marginals each round picks (each by its own exponential mechanism among those not yet picked), refitting once: a
#: round's cost is its refit's compilation, so more marginals per round buy more measurements in the same wait.
PICKS_PER_ROUND = 4
#: The nominal picks that share what the one-way marginals leave (as many as MST's pairs and target pairs on Adult).
NOMINAL_PICKS = 32
#: The share of ρ that measures the d one-way marginals (MST's anchored plan gives them a quarter).
ONE_WAY_SHARE = 0.2
#: The share of each round's ρ that pays the selection (AIM's paper).
SELECTION_SHARE = 0.1
#: The model's largest size in MB of float64 cells, reached as the budget is spent.
MAX_MODEL_MB = 4.0
#: Seconds of rounds after which the next round is the last (spending what is left).
TIME_BUDGET = 60.0
#: The most marginals the last round measures (as many as the nominal picks what is left would have paid): one refit
#: for all of them, instead of the whole rest on a single marginal.
LAST_BATCH = 8
#: Mirror-descent steps of each round's warm-started refit (a convergence test may stop it sooner).
ROUND_ITERATIONS = 150
#: Rows drawn from the model each round to read its marginals on every candidate at once (the model's error on a
#: marginal of ``n`` cells then carries a draw's error of about ``total·√(n/rows)``, well under the noise term
#: ``√(2/π) σ n`` it is compared with; asking the library's inference for each unsupported candidate instead
#: compiles a program per candidate and round: minutes on Adult) ...
SCORING_ROWS = 50_000
#: ... fewer when there are many candidates, so that counting them all reads about this many cells a round
#: (Adult's 183 candidates: 50,000 rows; 80 columns with a target, 6,321 candidates: 5,000 rows, about 5 s a
#: round on a busy 2-core machine, against 48 s at 50,000), but never fewer than :data:`FEWEST_SCORING_ROWS`.
SCORING_CELLS = 25_000_000
FEWEST_SCORING_ROWS = 5_000

Clique = tuple[int, ...]


def workload(d: int, anchor: int | None = None, declared: list[Clique] | None = None) -> list[Clique]:
    """AIM's workload: the owner's ``declared`` cliques, else every pair of the ``d`` columns and every triple holding
    the target ``anchor``.

    A declared workload is public: it is chosen before the data are read, so it changes the candidates and their
    weights (and the selection's sensitivity, the largest weight times Δ₁), never what a person's rows can move.
    """
    if declared:
        return sorted({tuple(sorted(cl)) for cl in declared}, key=lambda cl: (len(cl), cl))
    pairs: list[Clique] = list(itertools.combinations(range(d), 2))
    if anchor is None:
        return pairs
    others = [i for i in range(d) if i != anchor]
    return pairs + [tuple(sorted((anchor, a, b))) for a, b in itertools.combinations(others, 2)]


def candidates(cliques: list[Clique], d: int) -> dict[Clique, float]:
    """Every clique of the workload and every non-empty subset, weighted by the workload columns it shares."""
    closure = {tuple(sorted(s)) for cl in cliques for r in range(1, len(cl) + 1) for s in itertools.combinations(cl, r)}
    closure |= {(i,) for i in range(d)}
    holding = np.bincount([i for w in cliques for i in w], minlength=d)  # |r ∩ w| summed over w: each column's count
    return {cl: float(holding[list(cl)].sum()) for cl in sorted(closure, key=lambda c: (len(c), c))}


@dataclass
class AimBudget:
    """The ρ spent so far and each round's measurement ρ and selection ε₀ (see the module's privacy argument)."""

    rho: float
    measure_rho: float
    select_epsilon: float
    spent: float = 0.0

    @classmethod
    def start(cls, rho: float, d: int) -> AimBudget:
        """The one-way measurements' ρ (:data:`ONE_WAY_SHARE` of ρ shared by the d columns, or all of it for one
        column); :meth:`for_rounds` then sets the rounds'."""
        return cls(rho, (ONE_WAY_SHARE if d > 1 else 1.0) * rho / d, 0.0)

    def for_rounds(self, d: int) -> None:
        """``T`` nominal rounds share what is left, each 0.9 to its measurement and 0.1 to its selection."""
        rounds = min(ROUNDS_PER_COLUMN * d, NOMINAL_PICKS)
        self.measure_rho = (1 - SELECTION_SHARE) * self.left / rounds
        self.select_epsilon = math.sqrt(8 * SELECTION_SHARE * self.left / rounds)

    @property
    def round_rho(self) -> float:
        return self.measure_rho + self.select_epsilon**2 / 8

    @property
    def left(self) -> float:
        return max(self.rho - self.spent, 0.0)

    def last_round(self, count: int = 1) -> None:
        """The next round's ``count`` selections and measurements spend exactly what is left."""
        self.measure_rho = (1 - SELECTION_SHARE) * self.left / count
        self.select_epsilon = math.sqrt(8 * SELECTION_SHARE * self.left / count)

    def anneal(self) -> None:
        """Halve σ (four times the measurement's ρ) and double ε₀ (four times the selection's ρ)."""
        self.measure_rho *= 4
        self.select_epsilon *= 2


def check_aim(calibration: Calibration) -> None:
    """AIM composes in zCDP: it needs Gaussian noise (a sentence naming the way out otherwise)."""
    if calibration.noise != "gaussian":
        raise DataError(_("AIM adds Gaussian noise only: choose Gaussian noise, or MST for Laplace noise."))


def aim_stages(d: int) -> list[Stage]:
    """AIM's rounds for :class:`~dpcore.progress.TimeLeft` (resized as the budget goes); the final fit is MST's."""
    return [Stage("aim rounds", MAX_ROUNDS)]


def _free(cliques: list[Clique]) -> set[Clique]:
    """Every subset of the model's cliques: measuring one of them does not grow the model."""
    return {tuple(sorted(s)) for cl in cliques for r in range(1, len(cl) + 1) for s in itertools.combinations(cl, r)}


def _allowed(
    mbi: Any, domain: Any, labels: list[int], weights: dict[Clique, float], measured: list[Clique], limit: float
) -> set[Clique]:
    """The candidates whose measurement keeps the model under ``limit`` MB, or does not grow it (the model's structure only).

    A candidate's model size is the current model's (Private-PGM's junction tree) plus the candidate's own cells: a
    lower bound (triangulating can add more), one junction tree per round instead of one per candidate (thousands of
    candidates on a wide table). With at most :data:`MAX_ROUNDS` marginals added the model stays small either way.
    """
    in_model = [tuple(labels[i] for i in cl) for cl in measured if len(cl) > 1]
    current = float(mbi.junction_tree.hypothetical_model_size(domain, in_model)) if in_model else 0.0
    free = _free([cl for cl in measured if len(cl) > 1]) | {cl for cl in weights if len(cl) == 1}
    room = (limit - current) * 2**20 / 8  # float64 cells
    return {cl for cl in weights if cl in free or float(np.prod([domain.shape[i] for i in cl])) <= room}


def select_marginal(
    weights: dict[Clique, float],
    answers: dict[Clique, np.ndarray],
    estimates: dict[Clique, np.ndarray],
    sigma: float,
    epsilon: float,
    sensitivity: float,
    rng: np.random.Generator,
) -> Clique:
    """The exponential mechanism's choice among the candidates with a model estimate (the others are not allowed).

    Utility ``w_r (‖answer_r − estimate_r‖₁ − √(2/π) σ n_r)``: it moves by at most ``w_r Δ₁ ≤ sensitivity`` when
    one person's rows change (the estimates come from the model, not the data), so the choice is ε-DP, ε²/8-zCDP.
    """
    order = list(weights)
    utilities = np.full(len(order), -np.inf)
    for at, cl in enumerate(order):
        if cl in estimates:
            bias = math.sqrt(2 / math.pi) * sigma * answers[cl].size
            utilities[at] = weights[cl] * (np.abs(answers[cl] - estimates[cl]).sum() - bias)
    return order[int(Exponential(epsilon, sensitivity=sensitivity, random_state=rng).select(utilities))]


def measure_and_fit(
    cells: np.ndarray,
    shape: tuple[int, ...],
    calibration: Calibration,
    rng: np.random.Generator,
    work: TimeLeft | None = None,
    anchor: int | None = None,
    clock: Callable[[], float] = time.monotonic,
    max_rounds: int = MAX_ROUNDS,
    time_budget: float = TIME_BUDGET,
    declared: list[Clique] | None = None,
) -> tuple[list[Measurement], Any]:
    """AIM's measurements and the Private-PGM model fitted to them (before the final fit), spending ρ exactly.

    ``work`` has the stages of :func:`aim_stages`; every round ticks it. ``max_rounds`` and ``time_budget``:
    when either is reached, the next round is the last and spends what is left. ``declared``: the owner's
    workload (:func:`workload`).
    """
    check_aim(calibration)
    mbi = private_pgm()
    d = len(shape)
    labels = names(shape)
    domain = mbi.Domain(labels, shape)
    budget = AimBudget.start(calibration.rho, d)
    weights = candidates(workload(d, anchor, declared), d)
    order = list(weights)
    answers = {cl: marginal(cells, shape, cl) for cl in order}  # exact: read only through the selection's mechanism
    sensitivity = max(weights.values(), default=1.0) * calibration.l1

    def measured(clique: Clique) -> Measurement:
        noise = Gaussian(rho=budget.measure_rho, sensitivity=calibration.l2, random_state=rng)
        budget.spent += budget.measure_rho
        return Measurement(clique, noise.randomise(answers[clique]), noise.sigma)

    measurements = [measured((i,)) for i in range(d)]
    if d == 1:
        return measurements, None
    budget.for_rounds(d)
    model = estimate(measurements, shape, iterations=ROUND_ITERATIONS)
    started = clock()
    rounds = 0
    last = False
    previous: tuple[Clique, np.ndarray, float] | None = None  # the last round's choice, the model's answer and σ before
    if work is not None:
        work.begin("aim rounds", _("Choosing the marginals the model gets most wrong…"))
    scoring_rows = int(min(SCORING_ROWS, max(FEWEST_SCORING_ROWS, SCORING_CELLS // len(order))))
    while not last:
        rounds += 1
        sample = draw(model, shape, scoring_rows, rng, method="sample")
        scale = float(model.total) / scoring_rows
        if previous is not None:  # anneal when the last measurement barely moved the model: its noise was too loud
            chosen, before, sigma = previous
            after = marginal(sample, shape, chosen) * scale
            if np.abs(after - before).sum() <= math.sqrt(2 / math.pi) * sigma * before.size:
                budget.anneal()
        batch = PICKS_PER_ROUND
        if budget.left < (PICKS_PER_ROUND + 1) * budget.round_rho or rounds >= max_rounds or clock() - started >= time_budget:
            batch = int(min(LAST_BATCH, max(budget.left // budget.round_rho, 1)))
            last = True
        limit = MAX_MODEL_MB if last else MAX_MODEL_MB * (budget.spent + batch * budget.round_rho) / calibration.rho
        allowed = _allowed(mbi, domain, labels, weights, [m.clique for m in measurements], limit)
        estimates = {cl: marginal(sample, shape, cl) * scale for cl in order if cl in allowed}
        batch = min(batch, len(estimates))
        if last:
            budget.last_round(batch)
        sigma = calibration.l2 / math.sqrt(2 * budget.measure_rho)
        for _pick in range(batch):  # a batch's later picks exclude the earlier ones; the model is refitted once
            selection_epsilon = budget.select_epsilon
            budget.spent += selection_epsilon**2 / 8
            chosen = select_marginal(weights, answers, estimates, sigma, selection_epsilon, sensitivity, rng)
            before = estimates.pop(chosen)
            if _pick == 0:
                previous = (chosen, before, sigma)
            measurements.append(measured(chosen))
        model = estimate(measurements, shape, iterations=ROUND_ITERATIONS, warm_start=model)
        if work is not None:
            rounds_left = 0.0 if last else min(max(budget.left / budget.round_rho / PICKS_PER_ROUND, 1.0), max_rounds - rounds)
            work.resize("aim rounds", rounds + rounds_left)
            work.tick(
                _("Round {round}: {count} marginals measured, {share} of the budget left").format(
                    round=rounds, count=len(measurements), share=f"{budget.left / calibration.rho:.0%}"
                )
            )
    return measurements, model
