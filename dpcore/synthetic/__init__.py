r"""A synthetic copy of a table: rows drawn from a graphical model of noisy low-order marginals (MST).

Besides the randomized-response copy (:mod:`dpcore.release`), an owner can sell a table whose
rows are all invented: DP Studio measures the table's one-way marginals and a spanning tree of
two-way marginals with calibrated noise, fits a graphical model to those noisy counts with
McKenna's Private-PGM (``mbi``), and draws rows from it. This is MST (McKenna, Miklau & Sheldon
2021, winner of the 2018 NIST synthetic-data challenge), over the *declared* domain.

Privacy argument
----------------
*The domain is declared.* Every column's cells are its declared categories or the declared
bins over its declared bounds (plus a ``(missing)`` cell when it may be missing); nothing is
read from the data (:mod:`~dpcore.synthetic.domain`). Every marginal counts all of its cells,
empty ones included, so the noisy answer has the same shape for every dataset.

*Sensitivity.* Under add/remove neighbours one row moves one cell of each marginal by one
(L1 = L2 = 1); under replace-one it moves one count down and one up (L1 = 2, L2 = √2). A value
outside the declared domain is first mapped to a uniformly random cell, a per-row map with its
own coin, so the bound holds for every row. With a privacy-unit column at most ``k`` rows of
each person are kept (a random subset drawn from the unit column and the copy's entropy alone,
:func:`~dpcore.release.contributions.bounded`), and every sensitivity is multiplied by ``k``.

*Measurement (the only step that reads the data).* The ``d`` one-way marginals, then ``d − 1``
rounds of the exponential mechanism choosing the pairs of a spanning tree (utility: the L1
distance between a pair's true marginal and the product of the noisy one-way shares, whose
sensitivity is the marginals' L1 sensitivity), then the chosen pairs' two-way marginals. With
Gaussian noise the owner's (ε, δ) is turned into ρ-zCDP (``ε = ρ + 2√(ρ ln 1/δ)``), a third
goes to each step, marginals get ``σ = Δ₂/√(2ρ_i)``, and an exponential round of ε₀ costs
ε₀²/8; zCDP adds up, so the measurement is ρ-zCDP and hence (ε, δ)-DP. With Laplace noise each
step gets ε/3, each marginal ``Lap(Δ₁/ε_i)`` and each round ε_i, adding up to ε
(:mod:`~dpcore.synthetic.budget`).

*Everything else is post-processing.* The model fit, the noisy row count (the inverse-variance
average of the noisy marginals' sums, never the exact count, unless the owner declares a
public size), the drawn rows, their order and the report are functions of the noisy
measurements and of fresh randomness only, so the copy is (ε, δ)-DP per person in the
dataset's unit. It needs no padding: the row count is already noisy.

*The ledger.* The budget is checked before anything is measured and the copy is charged,
with its δ and unit of protection, before it is returned. Every copy is a new release and is
charged again (the copy is not stored: unlike randomized-response copies, two synthetic copies
do not average to the truth faster than their cost says, as each is paid for in full).
A seed is for tests; a seeded copy's report says it must not be sold.

*AIM* (:mod:`~dpcore.synthetic.aim`, McKenna et al. 2022) is the owner's other choice: the same
declared domain, sensitivities, privacy unit, noisy row count, ledger and report, with ρ spent
round by round on the workload marginal (every pair, the target's triples) the model gets most
wrong, chosen by the exponential mechanism; its privacy argument is in its module.

Modules
-------
:mod:`~dpcore.synthetic.domain`, :mod:`~dpcore.synthetic.budget`, :mod:`~dpcore.synthetic.measure`
    The declared cells; the noise of each step; the noisy marginals and the chosen pairs.
:mod:`~dpcore.synthetic.aim`
    AIM's rounds: the workload, the selection, the annealing and the budget.
:mod:`~dpcore.synthetic.model`
    Private-PGM's fit and draw (imported lazily: the engine works without ``mbi``).
:mod:`~dpcore.synthetic.table`, :mod:`~dpcore.synthetic.report`
    :func:`synthesize_table` and the buyer's report and reader.
:mod:`~dpcore.synthetic.preview`
    The owner-only utility preview of both kinds of copy.
"""

from dpcore.synthetic.budget import DEFAULT_DELTA, NOISES, Calibration
from dpcore.synthetic.domain import SyntheticColumn, synthetic_columns
from dpcore.synthetic.preview import utility_preview
from dpcore.synthetic.report import REPORT_FORMAT, report_markdown, trust_sentences
from dpcore.synthetic.table import (
    METHODS,
    SyntheticResult,
    copy_for_models,
    copy_to_learn_from,
    read_synthetic,
    studied_together,
    synthesize_table,
    synthetic_frame,
    synthetic_shares,
)

__all__ = [
    "DEFAULT_DELTA",
    "METHODS",
    "NOISES",
    "REPORT_FORMAT",
    "Calibration",
    "SyntheticColumn",
    "SyntheticResult",
    "copy_for_models",
    "copy_to_learn_from",
    "read_synthetic",
    "report_markdown",
    "studied_together",
    "synthesize_table",
    "synthetic_columns",
    "synthetic_frame",
    "synthetic_shares",
    "trust_sentences",
    "utility_preview",
]
