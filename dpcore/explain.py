"""Plain-language guidance about ε, and live demonstrations of what the mechanisms do.

The demonstrations only ever touch toy public values (a count of 120, twenty made-up yes/no
answers), never the owner's data, so showing them costs no privacy.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from dpcore.i18n import N_, _, decimal, integer, short
from dpcore.mechanisms import COIN_EPSILON, CoinRandomizedResponse, KaryRandomizedResponse, count_mechanism
from dpcore.validation import RandomStateLike

# The sentences below are marked for the catalog and translated where they are shown (``_(PROMISE)``).
HARM_PRESETS = {
    N_("Confidential, but disclosure would not harm anyone"): 1.0,
    N_("Disclosure could cause someone harm"): 0.25,
    N_("Disclosure could cause serious harm"): 0.05,
}

MECHANISM_NOTES = {
    "laplace": N_("Laplace noise: adds a random amount, usually small, to each number; simple and standard."),
    "geometric": N_("Geometric (discrete Laplace) noise: the same idea for whole-number counts, with no rounding artefacts."),
    "gumbel": N_("Exponential mechanism: picks a choice (e.g. a split) at random, favouring good ones, drawn exactly."),
    "permute_and_flip": N_(
        "Permute-and-flip: the same guarantee as the exponential mechanism, never worse, often a little better."
    ),
    "coin": N_(
        "Coin randomized response (ε = ln 3 ≈ 1.10): each yes/no answer is kept 3 times in 4, else replaced by a coin flip."
    ),
    "k-ary": N_(
        "k-ary randomized response: each category is kept with a probability set by ε, else replaced by a random other one."
    ),
}


PROMISE = N_(
    "**What we promise.** Every model, number or file that leaves this screen is differentially private for "
    "every person in the dataset, in the dataset's unit of protection: whatever anyone learns from all of them "
    "together, it is at most e^ε times more likely — plus a chance δ, for approximate-DP models — whether or not one "
    "person's row is in the table (or, in the 'values may change' unit, whatever that person's values are). ε and δ "
    "are the dataset's totals: every release is recorded with its own (ε, δ) and neighbours, converted to the "
    "dataset's unit (an add/remove release counts double where values may change), and added up (basic composition). "
    "A release that would pass the total is refused. The budget belongs to the people, not to a file: a re-saved, "
    "reordered, renamed or extended copy of the table spends the same budget. Bounds and categories are your public "
    "declarations; anything read from the data is flagged as not private and never released. If one person can have "
    "several rows, say which column identifies them on the Data page: every ε is then per person, counting up to the "
    "number of rows you choose (otherwise each row counts as a person). What we do not promise: protection for columns "
    "you declare public, or for anything you share outside DP Studio — raw previews and comparisons marked 'owner's "
    "eyes only'."
)


def e_to_the(epsilon: float) -> str:
    """e^ε in words (:func:`times`), worked out in logarithms so that no ε overflows: e^(10^9) ≈ 2 × 10^434294481."""
    if epsilon < 20:
        return times(math.exp(epsilon))
    exponent = epsilon / math.log(10)
    whole = math.floor(exponent)
    leading = round(10 ** (exponent - whole))
    if leading == 10:
        leading, whole = 1, whole + 1
    return f"{leading} × 10^{whole}"


def times(factor: float) -> str:
    """A likelihood ratio in words a person reads at a glance: 1.28, 55, 12 thousand, 3 × 10^43."""
    if factor < 10:
        return decimal(factor, 2)
    if factor < 1000:
        return integer(factor)
    if factor < 1e6:
        return _("{number} thousand").format(number=integer(factor / 1000))
    if factor < 1e9:
        return _("{number} million").format(number=integer(factor / 1e6))
    exponent = int(math.floor(math.log10(factor)))
    return f"{factor / 10**exponent:.0f} × 10^{exponent}"


def one_person_sentence(epsilon: float) -> str:
    """What ε means for one person, in words."""
    return _(
        "Whatever anyone learns about you is at most {factor} times more likely with your row in the table "
        "than without it (e^ε = e^{epsilon})."
    ).format(factor=e_to_the(epsilon), epsilon=short(epsilon))


def epsilon_problem(text: object, available: float | None = None, name: str | None = None) -> tuple[float | None, str | None]:
    """Read an ε typed by the owner: ``(value, None)``, or ``(None, a sentence saying what is wrong)``.

    Never a silent substitute: a value that cannot be used is refused with the reason, in words.
    """
    name = name or "ε"
    try:
        value = float(str(text).strip().replace(",", "."))
    except ValueError:
        return None, _("{name} must be a number, such as {example}.").format(name=name, example=short(0.5))
    if not math.isfinite(value) or value <= 0:
        return None, _("{name} must be a number greater than 0.").format(name=name)
    if available is not None and value > available + 1e-12:
        return None, _("{name} = {value} is more than the {left} left in this dataset's budget.").format(
            name=name, value=short(value), left=short(max(available, 0))
        )
    return value, None


def epsilon_warnings(epsilon: float) -> list[str]:
    """Warnings for budgets that are unusually large or small."""
    out = []
    if epsilon > 10:
        out.append(
            _("ε = {epsilon} is a very weak guarantee: e^ε ≈ {factor}. Use it only for data that is nearly public.").format(
                epsilon=short(epsilon), factor=e_to_the(epsilon)
            )
        )
    elif epsilon > 4:
        out.append(
            _("ε = {epsilon} is weaker than most published deployments use (usually ε ≤ 4 per release).").format(
                epsilon=short(epsilon)
            )
        )
    if epsilon < 0.01:
        out.append(
            _("ε = {epsilon} is so small that models will be mostly noise unless the table has millions of rows.").format(
                epsilon=short(epsilon)
            )
        )
    return out


def noisy_count_demo(
    epsilon: float, true_count: int = 120, draws: int = 20, noise: str = "laplace", random_state: RandomStateLike = None
) -> pd.DataFrame:
    """Twenty noisy releases of a public toy count, as the chosen mechanism would make them."""
    mechanism = count_mechanism(noise, epsilon, random_state)
    released = mechanism.randomise(np.full(draws, true_count))
    return pd.DataFrame({"draw": np.arange(1, draws + 1), "released count": np.round(released, 1), "true count": true_count})


def coin_demo(epsilon: float | None = None, answers: int = 20, random_state: RandomStateLike = None) -> pd.DataFrame:
    """What randomized response does to twenty made-up yes/no answers (coin when ``epsilon`` is None)."""
    rng = np.random.default_rng(random_state)
    truth = (rng.random(answers) < 0.3).astype(int)
    if epsilon is None or abs(epsilon - COIN_EPSILON) < 1e-12:
        released = CoinRandomizedResponse(random_state=rng).randomise(truth)
    else:
        released = KaryRandomizedResponse(epsilon, 2, random_state=rng).randomise(truth)
    labels = np.array(["no", "yes"])
    return pd.DataFrame({"person": np.arange(1, answers + 1), "true answer": labels[truth], "released answer": labels[released]})
