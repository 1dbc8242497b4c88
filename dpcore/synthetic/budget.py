"""How a synthetic copy's (ε, δ) is shared between its three steps, and each step's noise.

MST's split (McKenna, Miklau & Sheldon 2021), for ``d`` columns:

1. the ``d`` one-way marginals, a third of the budget;
2. choosing the ``d − 1`` pairs of a spanning tree with the exponential mechanism, a third;
3. the ``d − 1`` chosen two-way marginals, a third;

and, when the schema declares a target among the columns (a public declaration, read from no
data), a fourth step measures the target's pair with every other column, each step then
getting a quarter: a buyer's model of the target needs exactly those relations, which a tree
alone keeps only along its paths (on Adult at ε = 1 this lifts the train-on-copy accuracy by
about two points; see benchmarks/synthetic.py).

*Gaussian noise* (the default): the owner's (ε, δ) becomes ρ-zCDP by ``ε = ρ + 2√(ρ ln 1/δ)``
(Bun & Steinke 2016, Prop. 1.3; :func:`~dpcore.mechanisms.gaussian.zcdp_rho`), zCDP adds up
over the steps, each marginal gets ``ρ/3`` shared equally, and each exponential-mechanism round
of ε₀ is ``ε₀²/8``-zCDP (Cesar & Rogers 2021), so a round gets ``ε₀ = √(8 (ρ/s) / (d − 1))`` for ``s`` steps.
*Laplace noise*: pure ε-DP, an equal share of ε per step shared equally between its calls.

Sensitivities hold for every dataset, in the dataset's unit of protection: adding or removing
one row moves one cell of every marginal by one (L1 = L2 = 1); changing one row's values moves
two cells (L1 = 2, L2 = √2). The exponential mechanism's utility (an L1 distance to a fixed
estimate) moves by at most the L1 sensitivity. When a person can have up to ``k`` rows, every
sensitivity is ``k`` times larger: the noise, not the charge, grows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from dpcore.budget.accountant import ADD_REMOVE, check_unit
from dpcore.exceptions import DataError
from dpcore.i18n import _
from dpcore.mechanisms.gaussian import zcdp_rho
from dpcore.validation import check_delta, check_epsilon

NOISES = ("gaussian", "laplace")
#: δ of a synthetic copy with Gaussian noise when the owner names none: a tenth of the ledger's
#: default total δ (1e-5), so other approximate-DP releases keep room.
DEFAULT_DELTA = 1e-6


@dataclass(frozen=True)
class Calibration:
    """The noise of each step of a copy of ``n_columns`` columns at (``epsilon``, ``delta``).

    Parameters
    ----------
    epsilon, delta : float
        What the copy costs per person in ``unit`` (δ = 0 with Laplace noise).
    noise : {"gaussian", "laplace"}
    unit : {"add/remove", "replace-one"}
    rows_per_person : int
        ``k``: the most rows a person has in the measured table.
    n_columns : int
        ``d``, the number of columns of the copy.
    anchored : bool
        A fourth step measures every pair of the declared target with another column (the
        relations a buyer training a model needs most); each step then gets a quarter.
    """

    epsilon: float
    delta: float
    noise: str
    unit: str
    rows_per_person: int
    n_columns: int
    anchored: bool = False

    def __post_init__(self) -> None:
        check_epsilon(self.epsilon)
        check_unit(self.unit)
        if self.noise not in NOISES:
            raise DataError(_("The noise must be gaussian or laplace."))
        if self.noise == "gaussian":
            if not 0 < check_delta(self.delta) < 1:
                raise DataError(_("Gaussian noise needs a δ between 0 and 1, such as 1e-6."))
        elif self.delta != 0:
            raise DataError(_("Laplace noise is pure ε-differential privacy: its δ is 0."))
        if self.n_columns < 1:
            raise DataError(_("A synthetic copy needs at least one column."))

    @property
    def rounds(self) -> int:
        """How many pairs the spanning tree chooses (``d − 1``)."""
        return self.n_columns - 1

    @property
    def rho(self) -> float:
        """The copy's total ρ (zCDP) with Gaussian noise."""
        return zcdp_rho(self.epsilon, self.delta)

    @property
    def l1(self) -> float:
        """One person's L1 sensitivity of a marginal (and of a selection utility)."""
        return float((1 if self.unit == ADD_REMOVE else 2) * self.rows_per_person)

    @property
    def l2(self) -> float:
        """One person's L2 sensitivity of a marginal."""
        return (1.0 if self.unit == ADD_REMOVE else math.sqrt(2.0)) * self.rows_per_person

    def _steps(self) -> int:
        return (4 if self.anchored else 3) if self.rounds else 1

    def marginal_budget(self, count: int) -> float:
        """ρ (Gaussian) or ε (Laplace) of each of ``count`` marginals measured in one step."""
        share = (self.rho if self.noise == "gaussian" else self.epsilon) / self._steps()
        return share / count

    def selection_epsilon(self) -> float:
        """ε of each exponential-mechanism round of the spanning tree (0 with a single column)."""
        if not self.rounds:
            return 0.0
        if self.noise == "gaussian":
            return math.sqrt(8.0 * self.rho / self._steps() / self.rounds)
        return self.epsilon / self._steps() / self.rounds

    def stddev(self, count: int) -> float:
        """The standard deviation of each cell's noise in a step of ``count`` marginals."""
        budget = self.marginal_budget(count)
        if self.noise == "gaussian":
            return self.l2 / math.sqrt(2.0 * budget)
        return math.sqrt(2.0) * self.l1 / budget
