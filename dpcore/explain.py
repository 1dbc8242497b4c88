"""Plain-language guidance about ε, and live demonstrations of what the mechanisms do.

The demonstrations only ever touch toy public values (a count of 120, twenty made-up yes/no
answers), never the owner's data, so showing them costs no privacy.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from dpcore.mechanisms import COIN_EPSILON, CoinRandomizedResponse, KaryRandomizedResponse, count_mechanism

HARM_PRESETS = {
    "Confidential, but disclosure would not harm anyone": 1.0,
    "Disclosure could cause someone harm": 0.25,
    "Disclosure could cause serious harm": 0.05,
}

MECHANISM_NOTES = {
    "laplace": "Laplace noise: adds a random amount, usually small, to each number; simple and standard.",
    "geometric": "Geometric (discrete Laplace) noise: the same idea for whole-number counts, with no rounding artefacts.",
    "gumbel": "Exponential mechanism: picks a choice (e.g. a split) at random, favouring good ones, by a Gumbel draw.",
    "permute_and_flip": "Permute-and-flip: the same guarantee as the exponential mechanism, never worse, often a little better.",
    "coin": "Coin randomized response (ε = ln 3 ≈ 1.10): each yes/no answer is kept 3 times in 4, else replaced by a coin flip.",
    "k-ary": "k-ary randomized response: each category is kept with a probability set by ε, else replaced by a random other one.",
}


PROMISE = (
    "**What we promise.** Every model, number or file that leaves this screen is differentially private for "
    "every person in the dataset, in the dataset's unit of protection: whatever anyone learns from all of them "
    "together, it is at most e^ε times more likely — plus a chance δ, for approximate-DP models — whether or not one "
    "person's row is in the table (or, in the 'values may change' unit, whatever that person's values are). ε and δ "
    "are the dataset's totals: every release is recorded with its own (ε, δ) and neighbours, converted to the "
    "dataset's unit (an add/remove release counts double where values may change), and added up (basic composition). "
    "A release that would pass the total is refused. The budget belongs to the people, not to a file: a re-saved, "
    "reordered, renamed or extended copy of the table spends the same budget. Bounds and categories are your public "
    "declarations; anything read from the data is flagged as not private and never released. What we do not promise: "
    "protection for a person who appears in several rows (each row counts as a person), for columns you declare "
    "public, or for anything you share outside DP Studio — raw previews and comparisons marked 'owner's eyes only'."
)


def one_person_sentence(epsilon: float) -> str:
    """What ε means for one person, in words."""
    factor = math.exp(epsilon)
    return (
        f"Whatever anyone learns about you is at most {factor:.2f} times more likely with your row in the table "
        f"than without it (e^ε = e^{epsilon:g})."
    )


def epsilon_warnings(epsilon: float) -> list[str]:
    """Warnings for budgets that are unusually large or small."""
    out = []
    if epsilon > 10:
        out.append(f"ε = {epsilon:g} is a very weak guarantee: e^ε ≈ {math.exp(min(epsilon, 700)):.3g}. Use it only for data that is nearly public.")
    elif epsilon > 4:
        out.append(f"ε = {epsilon:g} is weaker than most published deployments use (usually ε ≤ 4 per release).")
    if epsilon < 0.01:
        out.append(f"ε = {epsilon:g} is so small that models will be mostly noise unless the table has millions of rows.")
    return out


def noisy_count_demo(epsilon: float, true_count: int = 120, draws: int = 20, noise: str = "laplace", random_state=None) -> pd.DataFrame:
    """Twenty noisy releases of a public toy count, as the chosen mechanism would make them."""
    mechanism = count_mechanism(noise, epsilon, random_state)
    released = mechanism.randomise(np.full(draws, true_count))
    return pd.DataFrame({"draw": np.arange(1, draws + 1), "released count": np.round(released, 1), "true count": true_count})


def coin_demo(epsilon: float | None = None, answers: int = 20, random_state=None) -> pd.DataFrame:
    """What randomized response does to twenty made-up yes/no answers (coin when ``epsilon`` is None)."""
    rng = np.random.default_rng(random_state)
    truth = (rng.random(answers) < 0.3).astype(int)
    if epsilon is None or abs(epsilon - COIN_EPSILON) < 1e-12:
        released = CoinRandomizedResponse(random_state=rng).randomise(truth)
    else:
        released = KaryRandomizedResponse(epsilon, 2, random_state=rng).randomise(truth)
    labels = np.array(["no", "yes"])
    return pd.DataFrame({"person": np.arange(1, answers + 1), "true answer": labels[truth], "released answer": labels[released]})
