"""The privacy report a buyer gets with the copy: JSON for machines, Markdown for people.

Built from declarations only (plan and schema) and the mechanisms' parameters, never from data
values or statistics of the table.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from dpcore.i18n import N_, _, amount, language
from dpcore.release.writing import ESCAPING_RULE

REPORT_FORMAT = "dpcore-release-report/1"
MECHANISM_TITLES = {
    "drop": N_("left out"),
    "keep": N_("copied unchanged (declared public, NOT protected)"),
    "coin": N_("two-coin randomized response"),
    "k-ary": N_("k-ary randomized response"),
    "bins": N_("bucketed into bins, then k-ary randomized response"),
    "laplace": N_("clipped to the bounds, then local Laplace noise"),
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

PERSONS = (
    "a person may have several rows: the owner kept at most rows_per_person rows of each person (a uniformly random "
    "subset, chosen from the column that says whose row it is and nothing else) before randomising, and that column is "
    "not in the copy. Every kept row is randomised on its own, so a person's rows add up: by group privacy, adding, "
    "removing or changing one person changes the probability of any copy by at most a factor "
    "e^(rows_per_person x per_row_epsilon) = e^per_person_epsilon, per_row_epsilon being per_record_epsilon plus "
    "row_count_epsilon when the copy is padded"
)
PERSON_ESTIMATES = (
    "every estimate is per row of the copy: shares and means are of the kept rows (at most rows_per_person of each "
    "person), not of people and not of every row of the original table"
)


def significant(x: float, digits: int = 4) -> str:
    """``x`` written with ``digits`` significant digits, with the reader's decimal sign (0,25 in Vietnamese)."""
    return amount(f"{x:.{digits}g}")


def describe_entry(entry: dict[str, Any]) -> str:
    """One plain-language sentence about what happens to a column (for the owner and the buyer)."""
    mechanism = entry["mechanism"]
    if mechanism == "drop":
        return _("Left out of the copy.")
    if mechanism == "keep":
        return _("Copied unchanged because it is declared public. It is not protected at all.")
    if mechanism == "laplace":
        return _(
            "Each value is clipped to [{lower}, {upper}] (a missing value becomes {fill}), then random Laplace noise of "
            "scale {scale} is added, so a single value is typically off by about {scale}. ε = {epsilon}."
        ).format(
            lower=significant(entry["lower"], 8),
            upper=significant(entry["upper"], 8),
            fill=significant(entry["fill_value"], 8),
            scale=significant(entry["scale"]),
            epsilon=significant(entry["epsilon"]),
        )
    k = entry["n_categories"]
    if mechanism == "coin":
        sentence = _(
            "A coin is tossed for each value: heads keeps it, tails lets a second coin pick either category "
            "(the true value survives with probability 3/4). ε = ln 3 ≈ {epsilon}."
        ).format(epsilon=significant(entry["epsilon"]))
    elif mechanism == "bins":
        sentence = _(
            "Each number is put into one of {bins} bins between {lower} and {upper} (values outside go to the end bins); "
            "then each bin is kept with probability {keep} and otherwise replaced by one of the other {others} values, "
            "chosen at random. ε = {epsilon}."
        ).format(
            bins=entry["n_bins"],
            lower=significant(entry["lower"], 8),
            upper=significant(entry["upper"], 8),
            keep=significant(entry["keep_probability"], 3),
            others=k - 1,
            epsilon=significant(entry["epsilon"]),
        )
    else:
        sentence = _(
            "Each value is kept with probability {keep} and otherwise replaced by one of the other {others} values, "
            "chosen at random. ε = {epsilon}."
        ).format(keep=significant(entry["keep_probability"], 3), others=k - 1, epsilon=significant(entry["epsilon"]))
    if entry.get("missing") == "category":
        return sentence + " " + _("Missing values are randomised like a category of their own.")
    if mechanism == "bins":
        return sentence + " " + _("A missing number is replaced by a bin chosen uniformly at random.")
    return sentence + " " + _("A missing or undeclared value is replaced by a value chosen uniformly at random.")


def estimates_of(entry: dict[str, Any]) -> str:
    """What a randomized column's estimated shares are shares of, in one sentence."""
    if entry.get("missing") == "category":
        return _(
            "the share of every row of the table in each category, a missing value counting as '(missing)'; an "
            "undeclared value was replaced by a category chosen uniformly at random"
        )
    return _(
        "the share of each category in the table as it would be if every missing or undeclared value were replaced "
        "by a category chosen uniformly at random — not the share among known values"
    )


def build_report(
    entries: Iterable[dict[str, Any]],
    *,
    dropped: Iterable[str],
    per_record_epsilon: float,
    warnings: Iterable[str],
    seeded: bool,
    release_id: str,
    created: str,
    protection: dict[str, Any] | None = None,
    persons: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The machine-readable report: declarations, mechanisms and formulas only — never data.

    ``persons`` (``rows_per_person``, ``per_row_epsilon``, ``per_person_epsilon``) when a person
    can have several rows: the report's ``privacy_unit``. It never holds the unit column's name.
    """
    privacy = dict(PRIVACY_MODEL)
    if protection and protection.get("padded"):
        privacy["padding"] = PADDING
    if persons:
        privacy["persons"] = PERSONS
    report: dict[str, Any] = {
        "format": REPORT_FORMAT,
        "release_id": release_id,
        "created": created,
        "seeded": bool(seeded),
        "per_record_epsilon": per_record_epsilon,
        "unit_of_protection": protection or {"unit": "replace-one", "padded": False, "epsilon": per_record_epsilon},
        **({"privacy_unit": dict(persons, estimates=PERSON_ESTIMATES)} if persons else {}),
        "privacy": privacy,
        "warnings": list(warnings),
        "columns": [],
        "dropped_columns": list(dropped),
        "csv_escaping": ESCAPING_RULE,
    }
    for entry in entries:
        with language("en"):  # the JSON is for machines: its sentences stay English whatever the reader's language
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
            with language("en"):
                entry["estimates_of"] = estimates_of(entry)
        elif entry["mechanism"] == "laplace":
            entry["estimator"] = dict(MEAN_FORMULAS)
        report["columns"].append(entry)
    return report


def _md(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def report_markdown(report: dict[str, Any]) -> str:
    """The human-readable report a buyer gets with the copy (built from the JSON report alone), in the current language."""
    lines = [_("# Privacy report: randomized-response copy of a table"), ""]
    if report.get("seeded"):
        lines += [
            _(
                "> **TEST RELEASE — made with a fixed random seed. Anyone who knows the seed can undo the noise. "
                "Do not sell or share this copy.**"
            ),
            "",
        ]
    for warning in report.get("warnings", []):
        lines += [_("> **WARNING: {warning}**").format(warning=_md(_(warning))), ""]
    persons = report.get("privacy_unit")
    if (report.get("unit_of_protection") or {}).get("padded"):
        short_version = _(
            "Nearly every row of this file describes one record of the original table (a few are filler rows, see below), "
            "but each sensitive value was randomised on its own before release."
        )
    else:
        short_version = _(
            "Every row of this file describes one record of the original table, but each sensitive value "
            "was randomised on its own before release."
        )
    short_version += " " + _(
        "Together, one record's released values satisfy **ε = {epsilon} local differential privacy**: whatever the file "
        "shows, each person can plausibly deny any value it holds for them. Shares and averages over many rows are still "
        "accurate once corrected with the formulas below."
    ).format(epsilon=significant(report["per_record_epsilon"], 6))
    if persons:
        short_version += " " + _("A person can have up to {k} rows in this file, and their rows add up: see below.").format(
            k=persons["rows_per_person"]
        )
    lines += [
        _("## In short"),
        "",
        short_version,
        "",
        _("## Whom this protects"),
        "",
        _protection_markdown(report),
        "",
        _("## Columns"),
        "",
        "| " + " | ".join((_("column"), _("protection"), "ε", _("chance a value is kept"), _("values in the file"))) + " |",
        "|---|---|---|---|---|",
    ]
    for entry in report["columns"]:
        domain, keep = entry.get("domain"), entry.get("keep_probability")
        if domain is not None:
            shown = ", ".join(map(str, domain[:12])) + (
                " " + _("… ({count} in all)").format(count=len(domain)) if len(domain) > 12 else ""
            )
        elif entry["mechanism"] == "laplace":
            shown = _("numbers (true range {lower} to {upper}, plus noise)").format(
                lower=significant(entry["lower"], 8), upper=significant(entry["upper"], 8)
            )
        else:
            shown = _("as in the original")
        lines.append(
            f"| {_md(entry['header'])} | {_(MECHANISM_TITLES[entry['mechanism']])} | {significant(entry['epsilon'], 6)} | "
            f"{'—' if keep is None else significant(keep, 4)} | {_md(shown)} |"
        )
    if report.get("dropped_columns"):
        lines += [
            "",
            _("Left out of the copy: {columns}.").format(columns=", ".join(f"`{_md(c)}`" for c in report["dropped_columns"])),
        ]
    lines += [
        "",
        _("## How to get unbiased estimates"),
        "",
        _(
            "For a randomized column with k values, keep probability p and q = (1 − p)/(k − 1) (listed per column below "
            "and in the JSON report), let λ_j be the share of rows showing value j and n the number of rows:"
        ),
        "",
        _("* estimated true share: **π_j = (λ_j − q) / (p − q)** (for the two-coin columns: π = 2λ − 1/2);"),
        _(
            "* its standard error for this table: √((π_j p(1 − p) + (1 − π_j) q(1 − q)) / n) / (p − q), with π_j clipped to "
            "[0, 1]; a 95% interval is π_j ± 1.96 standard errors (for a population the table was sampled from, add "
            "π_j(1 − π_j)/n to the variance);"
        ),
        _(
            "* joint shares of two randomized columns A and B: Π = M_A⁻¹ Λ (M_B⁻¹)ᵀ, where Λ is the table of observed joint "
            "shares and M[o, t] = p when o = t, q otherwise;"
        ),
        _("* a Laplace column's mean: the plain mean of the released values, standard error b√2/√n (b the noise scale)."),
        "",
        *(
            [
                _(
                    "All of these are per row of the file: shares and means are of the **kept rows** — at most {k} of each "
                    "person's rows were kept — not of people, and not of every row of the original table."
                ).format(k=persons["rows_per_person"]),
                "",
            ]
            if persons
            else []
        ),
        _(
            "Estimates can fall slightly below 0 or above 1; that is the price of being unbiased. Beside them, "
            "`python -m dpcore estimate FILE.csv --report REPORT.json` (which does all of this for you) gives "
            "**consistent** shares: the maximum-likelihood shares, π_j = (max(q, c_j/μ) − q)/(p − q) with c_j the count of "
            "rows showing value j and μ the number that makes them sum to 1. They sum to 1 and stay in [0, 1], and they "
            "equal the unbiased estimates whenever those already do; otherwise they are slightly biased (a share near 0 "
            "comes out a little too high on average), so compute intervals, and average over several tables, with the "
            "unbiased ones. When ε is small and the file short, both are mostly noise: compare the standard error with "
            "the shares before trusting either."
        ),
        "",
        _("## Column details"),
        "",
    ]
    for entry in report["columns"]:
        # The JSON keeps the English sentence; the report says it again in the reader's language.
        lines += [f"### {_md(entry['header'])}", "", describe_entry(entry), ""]
        if entry.get("estimates_of"):
            lines.append(_("* the estimated shares are {what}").format(what=estimates_of(entry)))
        if entry["mechanism"] in ("coin", "k-ary", "bins"):
            lines.append(
                f"* k = {entry['n_categories']}, p = {significant(entry['keep_probability'], 6)}, "
                f"q = {significant(entry['other_probability'], 6)}"
            )
        if entry["mechanism"] == "bins":
            # Translators: the separator between numbers in a list; use "; " where the decimal sign is a comma.
            lines.append(_("* bin edges: {edges}").format(edges=_(", ").join(significant(e, 6) for e in entry["edges"])))
        if entry["mechanism"] == "laplace":
            lines.append(
                _("* noise scale b = {scale} (variance {variance}), values rounded to {decimals} decimals").format(
                    scale=significant(entry["scale"], 6),
                    variance=significant(2 * entry["scale"] ** 2, 6),
                    decimals=entry["decimals"],
                )
            )
        lines.append("")
    lines += [
        _("## About the file"),
        "",
        _(ESCAPING_RULE),
        "",
        _(
            "This report holds only the owner's public declarations (column names, categories, bounds, bins) and the "
            "mechanisms' parameters. It contains no value or statistic of the original data."
        ),
        "",
    ]
    return "\n".join(lines)


def _protection_markdown(report: dict[str, Any]) -> str:
    unit, persons = report.get("unit_of_protection") or {}, report.get("privacy_unit")
    if persons:
        return _persons_markdown(report, unit, persons)
    if unit.get("padded"):
        return _(
            "Each person is protected with **ε = {epsilon}** where one person's row may be added to or removed from "
            "the table: ε = {values} for their values, plus ε = {count} for the number of rows, which is noisy — the "
            "copy holds a few filler rows, or lacks a few real ones, so nobody can tell from the count whether a person "
            "is in it."
        ).format(
            epsilon=significant(unit["epsilon"], 6),
            values=significant(report["per_record_epsilon"], 6),
            count=significant(unit["row_count_epsilon"], 6),
        )
    return _(
        "Each person's **values** are protected with ε = {epsilon} (one person's values may change). The number of rows "
        "is exact, so the copy does not hide **whether** someone is in the table: sell it only where being in the table "
        "is not itself sensitive."
    ).format(epsilon=significant(report["per_record_epsilon"], 6))


def _persons_markdown(report: dict[str, Any], unit: dict[str, Any], persons: dict[str, Any]) -> str:
    """Whom a copy protects when a person can have several rows: ε per person, counting up to k rows each."""
    k = persons["rows_per_person"]
    row = significant(report["per_record_epsilon"], 6)
    if unit.get("padded"):
        values = _("each row's values randomized with ε = {row}, plus ε = {count} per row for the noisy number of rows").format(
            row=row, count=significant(unit["row_count_epsilon"], 6)
        )
    else:
        values = _("each row's values randomized with ε = {row}").format(row=row)
    head = _(
        "Each person is protected with **ε = {epsilon} per person, counting up to {k} rows each** ({values}; a "
        "person's rows add up). The owner kept at most {k} rows of each person, chosen at random, before randomising; "
        "the column that says whose row it is is not in the copy."
    ).format(epsilon=significant(persons["per_person_epsilon"], 6), k=k, values=values)
    if unit.get("padded"):
        return (
            head
            + " "
            + _(
                "A person — all of their rows — may be added to or removed from the table: the number of rows "
                "is noisy (the copy holds a few filler rows, or lacks a few real ones), so nobody can tell from "
                "the count whether a person is in it."
            )
        )
    return (
        head
        + " "
        + _(
            "The number of rows is exact, so the copy does not hide **whether** someone is in the table, nor "
            "how many rows (up to {k}) they have: sell it only where that is not itself sensitive."
        ).format(k=k)
    )
