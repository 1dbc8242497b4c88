"""Private helpers of :mod:`dpcore.release`: the privacy report and the buyer's estimator.

* **The report**: machine-readable JSON entries and the Markdown a buyer reads, built from
  declarations only (plan and schema), never from data values or statistics of the table.
* **The estimator's arithmetic**, shared by the in-memory and the streaming estimates.
"""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np
import pandas as pd

from dpcore._release_io import ESCAPING_RULE
from dpcore.exceptions import DataError
from dpcore.mechanisms import CoinRandomizedResponse, KaryRandomizedResponse

# --- the report -------------------------------------------------------------------------------

REPORT_FORMAT = "dpcore-release-report/1"
MECHANISM_TITLES = {
    "drop": "left out",
    "keep": "copied unchanged (declared public, NOT protected)",
    "coin": "two-coin randomized response",
    "k-ary": "k-ary randomized response",
    "bins": "bucketed into bins, then k-ary randomized response",
    "laplace": "clipped to the bounds, then local Laplace noise",
}
FREQUENCY_FORMULAS = {
    "frequency": "pi_j = (lambda_j - q) / (p - q), where lambda_j is the share of released values equal to category j",
    "variance": (
        "Var(pi_j) = (pi_j p (1 - p) + (1 - pi_j) q (1 - q)) / (n (p - q)^2), with pi_j clipped to [0, 1]: the error of "
        "the estimate of this table's true share. To generalise to a population the table is a random sample of, add "
        "pi_j (1 - pi_j) / n (equivalently, use lambda_j (1 - lambda_j) / (n (p - q)^2))"
    ),
    "interval_95": "pi_j +/- 1.96 sqrt(Var(pi_j))",
    "consistent": (
        "the maximum-likelihood shares under the randomisation, constrained to sum to 1 and stay in [0, 1]: "
        "pi_j = (max(q, c_j / mu) - q) / (p - q), c_j the released count of category j and mu > 0 the number that "
        "makes them sum to 1; equal to the unbiased pi_j whenever all of those lie in [0, 1], otherwise slightly biased"
    ),
    "joint": (
        "for two randomized columns A and B released independently, the observed joint shares satisfy "
        "Lambda = M_A Pi M_B^T, with M[o, t] = p if o = t else q; so Pi = M_A^-1 Lambda (M_B^-1)^T "
        "(the Kronecker product (M_A x M_B)^-1 applied to the flattened table), with cell variances from "
        "the multinomial covariance of Lambda: Var(Pi_c) = ((K^2 Lambda)_c - Pi_c) / n, K = M_A^-1 x M_B^-1 squared "
        "element-wise, Pi_c clipped to [0, 1]"
    ),
}
COIN_FORMULA = "share of the second category: pi = 2 lambda - 1/2 (p = 3/4, q = 1/4)"
MEAN_FORMULAS = {
    "mean": "mu = the plain mean of the released values (unbiased for the mean of the clipped values)",
    "variance": (
        "Var(mu) = 2 b^2 / n, b the noise scale: the error of the estimate of this table's mean. To generalise to a "
        "population, use s^2 / n, s the standard deviation of the released values"
    ),
    "interval_95": "mu +/- 1.96 sqrt(Var(mu))",
}
PRIVACY_MODEL = {
    "model": "local differential privacy: every released value is randomised on its own, before anyone but the owner sees it",
    "per_value": (
        "for any two true values a, b of a column and any released value o, P(o | a) <= e^epsilon P(o | b) "
        "(randomized response: p / q = e^epsilon; Laplace: scale (upper - lower) / epsilon)"
    ),
    "composition": (
        "sequential across the randomised columns of one record (their epsilons add up to per_record_epsilon); "
        "parallel across records (each record is randomised with its own independent draws)"
    ),
    "neighbours": (
        "the guarantee protects the values of any one record: changing them changes the probability of the "
        "released row by at most a factor e^per_record_epsilon. On its own the copy does not hide the number of "
        "rows (every record yields one released row), as in every local-DP release"
    ),
}
PADDING = (
    "the copy was padded to a noisy row count: the true count plus two-sided geometric noise of epsilon = "
    "row_count_epsilon; when the noisy count is larger, filler rows are added, each the same mechanisms applied to "
    "an input drawn uniformly from the declared domain; when it is smaller, uniformly random rows are left out; "
    "the rows are then shuffled. Adding or removing one person then changes the probability of any copy by at most "
    "a factor e^(per_record_epsilon + row_count_epsilon): the count's noise covers the row that appears or "
    "disappears, and the local randomizer makes that row's released values indistinguishable from a filler row's "
    "or another person's"
)


def _fmt(x: float, digits: int = 4) -> str:
    return f"{x:.{digits}g}"


def describe_entry(entry: dict) -> str:
    """One plain-language sentence about what happens to a column (for the owner and the buyer)."""
    mechanism = entry["mechanism"]
    if mechanism == "drop":
        return "Left out of the copy."
    if mechanism == "keep":
        return "Copied unchanged because it is declared public. It is not protected at all."
    if mechanism == "laplace":
        return (
            f"Each value is clipped to [{_fmt(entry['lower'], 8)}, {_fmt(entry['upper'], 8)}] (a missing value becomes "
            f"{_fmt(entry['fill_value'], 8)}), then random Laplace noise of scale {_fmt(entry['scale'])} is added, so a "
            f"single value is typically off by about {_fmt(entry['scale'])}. ε = {_fmt(entry['epsilon'])}."
        )
    k = entry["n_categories"]
    if mechanism == "coin":
        sentence = (
            "A coin is tossed for each value: heads keeps it, tails lets a second coin pick either category "
            f"(the true value survives with probability 3/4). ε = ln 3 ≈ {_fmt(entry['epsilon'])}."
        )
    else:
        head = "Each value"
        if mechanism == "bins":
            head = (
                f"Each number is put into one of {entry['n_bins']} bins between {_fmt(entry['lower'], 8)} and "
                f"{_fmt(entry['upper'], 8)} (values outside go to the end bins); then each bin"
            )
        sentence = (
            f"{head} is kept with probability {_fmt(entry['keep_probability'], 3)} and otherwise replaced by one of "
            f"the other {k - 1} values, chosen at random. ε = {_fmt(entry['epsilon'])}."
        )
    if entry.get("missing") == "category":
        return sentence + " Missing values are randomised like a category of their own."
    if mechanism == "bins":
        return sentence + " A missing number is replaced by a bin chosen uniformly at random."
    return sentence + " A missing or undeclared value is replaced by a value chosen uniformly at random."


def estimates_of(entry: dict) -> str:
    """What a randomized column's estimated shares are shares of, in one sentence."""
    if entry.get("missing") == "category":
        return ("the share of every row of the table in each category, a missing value counting as '(missing)'; an "
                "undeclared value was replaced by a category chosen uniformly at random")
    return ("the share of each category in the table as it would be if every missing or undeclared value were replaced "
            "by a category chosen uniformly at random — not the share among known values")


def build_report(entries, *, dropped, per_record_epsilon, warnings, seeded, release_id, created, protection=None) -> dict:
    """The machine-readable report: declarations, mechanisms and formulas only — never data."""
    privacy = dict(PRIVACY_MODEL)
    if protection and protection.get("padded"):
        privacy["padding"] = PADDING
    report = {
        "format": REPORT_FORMAT,
        "release_id": release_id,
        "created": created,
        "seeded": bool(seeded),
        "per_record_epsilon": per_record_epsilon,
        "unit_of_protection": protection or {"unit": "replace-one", "padded": False, "epsilon": per_record_epsilon},
        "privacy": privacy,
        "warnings": list(warnings),
        "columns": [],
        "dropped_columns": list(dropped),
        "csv_escaping": ESCAPING_RULE,
    }
    for entry in entries:
        entry = dict(entry, description=describe_entry(entry))
        if entry["mechanism"] in ("coin", "k-ary", "bins"):
            entry["estimator"] = dict(FREQUENCY_FORMULAS)
            if entry["mechanism"] == "coin":
                entry["estimator"]["coin"] = COIN_FORMULA
            what = "a missing true number" if entry["mechanism"] == "bins" else "a missing or undeclared true value"
            entry["estimator"]["missing"] = (
                "the '(missing)' category's share is estimated like any other"
                if entry.get("missing") == "category"
                else f"{what} was replaced by a uniformly random category, so pi_j counts each such record as 1/k of "
                "every category"
            )
            entry["estimates_of"] = estimates_of(entry)
        elif entry["mechanism"] == "laplace":
            entry["estimator"] = dict(MEAN_FORMULAS)
        report["columns"].append(entry)
    return report


def _md(text) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def report_markdown(report: dict) -> str:
    """The human-readable report a buyer gets with the copy (built from the JSON report alone)."""
    lines = ["# Privacy report: randomized-response copy of a table", ""]
    if report.get("seeded"):
        lines += [
            "> **TEST RELEASE — made with a fixed random seed. Anyone who knows the seed can undo the noise. "
            "Do not sell or share this copy.**",
            "",
        ]
    for warning in report.get("warnings", []):
        lines += [f"> **WARNING: {_md(warning)}**", ""]
    lines += [
        "## In short",
        "",
        ("Nearly every row of this file describes one record of the original table (a few are filler rows, see below), "
         if (report.get("unit_of_protection") or {}).get("padded")
         else "Every row of this file describes one record of the original table, ")
        + "but each sensitive value was randomised on its own before release. Together, one record's released values satisfy "
        f"**ε = {_fmt(report['per_record_epsilon'], 6)} local differential privacy**: whatever the file shows, each "
        "person can plausibly deny any value it holds for them. Shares and averages over many rows are still accurate "
        "once corrected with the formulas below.",
        "",
        "## Whom this protects",
        "",
        _protection_markdown(report),
        "",
        "## Columns",
        "",
        "| column | protection | ε | chance a value is kept | values in the file |",
        "|---|---|---|---|---|",
    ]
    for entry in report["columns"]:
        domain, keep = entry.get("domain"), entry.get("keep_probability")
        if domain is not None:
            shown = ", ".join(map(str, domain[:12])) + (f", … ({len(domain)} in all)" if len(domain) > 12 else "")
        elif entry["mechanism"] == "laplace":
            shown = f"numbers (true range {_fmt(entry['lower'], 8)} to {_fmt(entry['upper'], 8)}, plus noise)"
        else:
            shown = "as in the original"
        lines.append(
            f"| {_md(entry['header'])} | {MECHANISM_TITLES[entry['mechanism']]} | {_fmt(entry['epsilon'], 6)} | "
            f"{'—' if keep is None else _fmt(keep, 4)} | {_md(shown)} |"
        )
    if report.get("dropped_columns"):
        lines += ["", "Left out of the copy: " + ", ".join(f"`{_md(c)}`" for c in report["dropped_columns"]) + "."]
    lines += [
        "",
        "## How to get unbiased estimates",
        "",
        "For a randomized column with k values, keep probability p and q = (1 − p)/(k − 1) (listed per column below "
        "and in the JSON report), let λ_j be the share of rows showing value j and n the number of rows:",
        "",
        "* estimated true share: **π_j = (λ_j − q) / (p − q)** (for the two-coin columns: π = 2λ − 1/2);",
        "* its standard error for this table: √((π_j p(1 − p) + (1 − π_j) q(1 − q)) / n) / (p − q), with π_j clipped to "
        "[0, 1]; a 95% interval is π_j ± 1.96 standard errors (for a population the table was sampled from, add "
        "π_j(1 − π_j)/n to the variance);",
        "* joint shares of two randomized columns A and B: Π = M_A⁻¹ Λ (M_B⁻¹)ᵀ, where Λ is the table of observed joint "
        "shares and M[o, t] = p when o = t, q otherwise;",
        "* a Laplace column's mean: the plain mean of the released values, standard error b√2/√n (b the noise scale).",
        "",
        "Estimates can fall slightly below 0 or above 1; that is the price of being unbiased. Beside them, "
        "`python -m dpcore estimate FILE.csv --report REPORT.json` (which does all of this for you) gives "
        "**consistent** shares: the maximum-likelihood shares, π_j = (max(q, c_j/μ) − q)/(p − q) with c_j the count of "
        "rows showing value j and μ the number that makes them sum to 1. They sum to 1 and stay in [0, 1], and they "
        "equal the unbiased estimates whenever those already do; otherwise they are slightly biased (a share near 0 "
        "comes out a little too high on average), so compute intervals, and average over several tables, with the "
        "unbiased ones. When ε is small and the file short, both are mostly noise: compare the standard error with "
        "the shares before trusting either.",
        "",
        "## Column details",
        "",
    ]
    for entry in report["columns"]:
        lines += [f"### {_md(entry['header'])}", "", entry["description"], ""]
        if entry.get("estimates_of"):
            lines.append(f"* the estimated shares are {entry['estimates_of']}")
        if entry["mechanism"] in ("coin", "k-ary", "bins"):
            lines.append(
                f"* k = {entry['n_categories']}, p = {_fmt(entry['keep_probability'], 6)}, "
                f"q = {_fmt(entry['other_probability'], 6)}"
            )
        if entry["mechanism"] == "bins":
            lines.append("* bin edges: " + ", ".join(_fmt(e, 6) for e in entry["edges"]))
        if entry["mechanism"] == "laplace":
            lines.append(
                f"* noise scale b = {_fmt(entry['scale'], 6)} (variance {_fmt(2 * entry['scale'] ** 2, 6)}), "
                f"values rounded to {entry['decimals']} decimals"
            )
        lines.append("")
    lines += [
        "## About the file",
        "",
        ESCAPING_RULE,
        "",
        "This report holds only the owner's public declarations (column names, categories, bounds, bins) and the "
        "mechanisms' parameters. It contains no value or statistic of the original data.",
        "",
    ]
    return "\n".join(lines)


def _protection_markdown(report: dict) -> str:
    unit = report.get("unit_of_protection") or {}
    if unit.get("padded"):
        return (f"Each person is protected with **ε = {_fmt(unit['epsilon'], 6)}** where one person's row may be added to or "
                f"removed from the table: ε = {_fmt(report['per_record_epsilon'], 6)} for their values, plus ε = "
                f"{_fmt(unit['row_count_epsilon'], 6)} for the number of rows, which is noisy — the copy holds a few "
                "filler rows, or lacks a few real ones, so nobody can tell from the count whether a person is in it.")
    return (f"Each person's **values** are protected with ε = {_fmt(report['per_record_epsilon'], 6)} (one person's values "
            "may change). The number of rows is exact, so the copy does not hide **whether** someone is in the table: "
            "sell it only where being in the table is not itself sensitive.")


def laplace_decimals(scale: float) -> int:
    """Decimals kept in a Laplace column: about 1/100 to 1/1000 of the noise scale."""
    return max(0, 2 - math.floor(math.log10(scale)))


# --- the estimator's arithmetic ------------------------------------------------------------------

ESTIMATE_COLUMNS = ["category", "estimate", "std_error", "ci_lower", "ci_upper", "consistent"]


def z_value(confidence: float) -> float:
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be between 0 and 1, got {confidence!r}")
    return NormalDist().inv_cdf(0.5 + confidence / 2)


def response(entry: dict) -> KaryRandomizedResponse:
    """The mechanism a report entry describes (for its keep probability and response matrix)."""
    if entry["mechanism"] == "coin":
        return CoinRandomizedResponse()
    return KaryRandomizedResponse(float(entry["epsilon"]), int(entry["n_categories"]))


def released_codes(values: pd.Series, entry: dict) -> np.ndarray:
    """Codes of released labels over the report's domain; a label outside it means a mismatched report."""
    codes = pd.Index(entry["domain"], dtype=object).get_indexer(values.astype(str).to_numpy(dtype=object))
    if (codes < 0).any():
        raise DataError(
            f"Column '{entry['header']}' holds values that are not in its domain in the report: does the report belong to this file?"
        )
    return codes


def frequencies_from_counts(counts, entry: dict, confidence: float) -> pd.DataFrame:
    """Debiased shares from the released counts of one column (see :func:`dpcore.release.estimate_column`)."""
    counts = np.asarray(counts, dtype=float)
    if counts.shape != (entry["n_categories"],):
        raise ValueError(f"counts must hold one number per category of {entry['header']!r} ({entry['n_categories']})")
    rr = response(entry)
    estimate, std_error = rr.estimate_from_counts(counts)
    consistent = consistent_shares(counts, rr.keep_probability, rr.other_probability)
    z = z_value(confidence)
    return pd.DataFrame(
        dict(
            zip(
                ESTIMATE_COLUMNS,
                [entry["domain"], estimate, std_error, estimate - z * std_error, estimate + z * std_error, consistent],
                strict=True,
            )
        )
    )


def consistent_shares(counts, p: float, q: float) -> np.ndarray:
    r"""The maximum-likelihood true shares on the simplex, from the released counts of one column.

    Under k-ary randomized response the released counts ``c`` are multinomial with
    probabilities ``λ = M π``, ``M[o, t] = p`` if ``o = t`` else ``q``. Because every column of
    ``M`` sums to 1, ``M π = (p − q) π + q`` on the simplex, an affine bijection onto
    ``{λ : Σ λ = 1, λ_o ≥ q}``; so the MLE maximises ``Σ c_o log λ_o`` over that set, whose
    Karush–Kuhn–Tucker conditions give ``λ_o = max(q, c_o / μ)`` with ``μ > 0`` fixed by
    ``Σ λ_o = 1`` ("water-filling"). Sorting the counts, the categories above the floor are the
    largest ``m`` with ``c_(m) > q μ_m``, ``μ_m = C_m / (1 − (k − m) q)`` and ``C_m`` the sum of the
    ``m`` largest counts. Then ``π = (λ − q)/(p − q)``.

    This is the fixed point of the EM / iterative Bayesian update ``π ← π ⊙ Mᵀ(λ̂ / M π)``,
    computed exactly in ``O(k log k)`` instead of iterated: EM's speed is set by how much of
    the information the noise hides, so at a small ε a few hundred iterations stop far from
    the maximum (at ε = 0.025 and two categories, 500 iterations from uniform reach a share
    of 0.75 where the maximum is 1). The MLE is preferred to the Euclidean projection of the
    unbiased vector onto the simplex: it weighs each category by the multinomial likelihood,
    and it equals the unbiased estimate whenever that already lies in the simplex (the
    projection does too, but shifts every category by the same amount otherwise). With no
    rows the likelihood is flat and the uniform shares are returned.
    """
    counts = np.asarray(counts, dtype=float)
    k = counts.size
    if counts.sum() <= 0:
        return np.full(k, 1.0 / k)
    largest = np.sort(counts)[::-1]
    free = np.arange(1, k + 1)
    mu = np.cumsum(largest) / (1.0 - (k - free) * q)  # 1 − (k − m) q ≥ p > 0
    m = np.flatnonzero(largest > q * mu)[-1]  # m = 1 always qualifies, since p > q
    observed = np.maximum(counts / mu[m], q)
    shares = np.clip((observed - q) / (p - q), 0.0, 1.0)
    return shares / shares.sum()


def joint_from_counts(counts, entry_a: dict, entry_b: dict, confidence: float) -> pd.DataFrame:
    """Debiased joint shares from the released joint counts (see :func:`dpcore.release.estimate_joint`)."""
    counts = np.asarray(counts, dtype=float)
    ka, kb = entry_a["n_categories"], entry_b["n_categories"]
    if counts.shape != (ka, kb):
        raise ValueError(f"counts must be a {ka} x {kb} table")
    n = max(counts.sum(), 1.0)
    observed = counts / n
    inv_a = np.linalg.inv(response(entry_a).response_matrix())
    inv_b = np.linalg.inv(response(entry_b).response_matrix())
    estimate = inv_a @ observed @ inv_b.T
    second = np.square(inv_a) @ observed @ np.square(inv_b).T
    std_error = np.sqrt(np.maximum(second - np.clip(estimate, 0.0, 1.0), 0.0) / n)
    z = z_value(confidence)
    return pd.DataFrame(
        {
            entry_a["header"]: np.repeat(entry_a["domain"], kb),
            entry_b["header"]: np.tile(entry_b["domain"], ka),
            "estimate": estimate.ravel(),
            "std_error": std_error.ravel(),
            "ci_lower": (estimate - z * std_error).ravel(),
            "ci_upper": (estimate + z * std_error).ravel(),
        }
    )


def mean_from_sum(n: int, total: float, entry: dict, confidence: float) -> pd.DataFrame:
    """The mean of a Laplace column's clipped values, with the exact standard error of its noise."""
    mean = total / max(n, 1)
    std_error = math.sqrt(2.0) * entry["scale"] / math.sqrt(max(n, 1))
    # The consistent mean: the clipped values' mean lies within the declared bounds, so the estimate is kept there.
    consistent = min(max(mean, entry.get("lower", -math.inf)), entry.get("upper", math.inf))
    z = z_value(confidence)
    return pd.DataFrame(
        dict(
            zip(
                ESTIMATE_COLUMNS,
                [["mean"], [mean], [std_error], [mean - z * std_error], [mean + z * std_error], [consistent]],
                strict=True,
            )
        )
    )


# --- how useful a copy will be -------------------------------------------------------------------

#: Verdict thresholds, on the ratio of the 95 % margin (1.96 standard errors) to the quantity's
#: natural size: the average share 1/k of a randomized-response column, half the declared range
#: of a Laplace column. From NOISE_RATIO up the interval around a typical share reaches 0 (the
#: buyer cannot tell a common category from an absent one; a mean cannot be placed in either half
#: of its range): mostly noise. Below USEFUL_RATIO a typical share is known to within ±20 % of
#: itself (a mean to within ±10 % of its range): useful. Between the two: rough.
NOISE_RATIO = 1.0
USEFUL_RATIO = 0.2
RATINGS = ("noise", "rough", "useful")


def share_error(p: float, q: float, share: float, n: int) -> float:
    """Standard error of one estimated share: √((π p(1−p) + (1−π) q(1−q))/n)/(p−q)."""
    share = min(max(share, 0.0), 1.0)
    return math.sqrt((share * p * (1 - p) + (1 - share) * q * (1 - q)) / max(n, 1)) / (p - q)


def _plus_minus(error: float) -> str:
    return "±" + (f"{float(f'{error:.2g}'):g}" if error >= 0.001 else "0.001 or less")


def rating(error: float, size: float) -> str:
    """``"noise"``, ``"rough"`` or ``"useful"``: the 95 % margin against the quantity's natural size."""
    ratio = 1.96 * error / size
    return "noise" if ratio >= NOISE_RATIO else "useful" if ratio < USEFUL_RATIO else "rough"


def verdict(column: str, error: float, *, k: int | None = None, lower: float | None = None, upper: float | None = None,
            who: str = "the buyer's", advise: bool = True) -> tuple[str, str]:
    """The rating and a plain sentence about how far off an estimate will be (a share, or a mean with ``lower, upper``).

    ``who`` names whose error it is ("the buyer's" for the owner, "your" for the buyer);
    ``advise`` adds what the owner can do about a noisy column.
    """
    if k is not None:
        size, what, against = 1.0 / k, "a share", f"the average share of its {k} values is {_fmt(1.0 / k, 2)}"
        fix = "Raise its ε, merge categories or bins, or drop it."
    else:
        size, what = (upper - lower) / 2, "the mean"
        against = f"its values range from {_fmt(lower, 6)} to {_fmt(upper, 6)}"
        fix = "Raise its ε, narrow its declared bounds, or drop it."
    level = rating(error, size)
    # A share lies in [0, 1]: an error past 1 only says the estimate is pure noise, so say that.
    off = (f"{who} estimate of {what} will be pure noise (its error exceeds ±1)" if k is not None and error > 1
           else f"{who} error on {what} will be about {_plus_minus(error)}")
    if level == "noise":
        sentence = f"At this ε the copy is mostly noise for '{column}': {off}, while {against}." + (f" {fix}" if advise else "")
    elif level == "rough":
        sentence = f"Rough for '{column}': {off} ({against}), enough for a rough picture only."
    else:
        sentence = f"Useful for '{column}': {off}."
    return level, sentence
