"""How useful a copy will be to a buyer, said before release (the owner's side).

The verdicts use the report's own variance formulas with the owner's row count; the
sentences are shared with the command line's ``estimate``, which says them to the buyer.
"""

from __future__ import annotations

import collections
import unicodedata

import numpy as np
import pandas as pd

from dpcore.i18n import N_, _
from dpcore.mechanisms import KaryRandomizedResponse
from dpcore.release.columns import treatment
from dpcore.release.estimator import mean_std_error
from dpcore.release.plan import RANDOMISED, ReleasePlan, column_problems
from dpcore.release.report import significant
from dpcore.tables.schema import Schema

#: Verdict thresholds, on the ratio of the 95 % margin (1.96 standard errors) to the quantity's
#: natural size: the average share 1/k of a randomized-response column, half the declared range
#: of a Laplace column. From NOISE_RATIO up the interval around a typical share reaches 0 (the
#: buyer cannot tell a common category from an absent one; a mean cannot be placed in either half
#: of its range): mostly noise. Below USEFUL_RATIO a typical share is known to within ±20 % of
#: itself (a mean to within ±10 % of its range): useful. Between the two: rough.
NOISE_RATIO = 1.0
USEFUL_RATIO = 0.2
RATINGS = ("noise", "rough", "useful")
#: The word an owner types to release a copy that is mostly noise (``_(NOISE_CONFIRMATION)`` in their language).
NOISE_CONFIRMATION = N_("noise")


def _plus_minus(error: float) -> str:
    return "±" + (f"{float(f'{error:.2g}'):g}" if error >= 0.001 else _("0.001 or less"))


def rating(error: float, size: float) -> str:
    """``"noise"``, ``"rough"`` or ``"useful"``: the 95 % margin against the quantity's natural size."""
    ratio = 1.96 * error / size
    return "noise" if ratio >= NOISE_RATIO else "useful" if ratio < USEFUL_RATIO else "rough"


def verdict(
    column: str,
    error: float,
    *,
    k: int | None = None,
    lower: float | None = None,
    upper: float | None = None,
    who: str | None = None,
    advise: bool = True,
) -> tuple[str, str]:
    """The rating and a plain sentence about how far off an estimate will be (a share, or a mean with ``lower, upper``).

    ``who`` names whose error it is ("the buyer's" for the owner, "your" for the buyer);
    ``advise`` adds what the owner can do about a noisy column.
    """
    buyer = who != "your"  # the owner reads about the buyer's error; the buyer (the CLI's estimate) about their own
    if k is not None:
        size, what = 1.0 / k, _("a share")
        against = _("the average share of its {k} values is {share}").format(k=k, share=significant(1.0 / k, 2))
        fix = _("Raise its ε, merge categories or bins, or drop it.")
    elif lower is None or upper is None:
        raise ValueError("verdict needs k for a share, or lower and upper for a mean")
    else:
        size, what = (upper - lower) / 2, _("the mean")
        against = _("its values range from {lower} to {upper}").format(lower=significant(lower, 6), upper=significant(upper, 6))
        fix = _("Raise its ε, narrow its declared bounds, or drop it.")
    level = rating(error, size)
    # A share lies in [0, 1]: an error past 1 only says the estimate is pure noise, so say that.
    if k is not None and error > 1:
        off = (
            _("the buyer's estimate of {what} will be pure noise (its error exceeds ±1)")
            if buyer
            else _("your estimate of {what} will be pure noise (its error exceeds ±1)")
        ).format(what=what)
    else:
        off = (
            _("the buyer's error on {what} will be about {error}") if buyer else _("your error on {what} will be about {error}")
        ).format(what=what, error=_plus_minus(error))
    if level == "noise":
        sentence = _("At this ε the copy is mostly noise for '{column}': {off}, while {against}.").format(
            column=column, off=off, against=against
        ) + (f" {fix}" if advise else "")
    elif level == "rough":
        sentence = _("Rough for '{column}': {off} ({against}), enough for a rough picture only.").format(
            column=column, off=off, against=against
        )
    else:
        sentence = _("Useful for '{column}': {off}.").format(column=column, off=off)
    return level, sentence


USEFULNESS_COLUMNS = ["column", "epsilon", "typical_error", "verdict", "rating"]


def usefulness(plan: ReleasePlan, schema: Schema, n_rows: int) -> pd.DataFrame:
    """A plain verdict, before release, on how useful the copy will be to a buyer, per randomised column.

    ``typical_error`` is the standard error of the buyer's estimate with ``n_rows`` rows, from
    the report's own variance formula: for a randomized-response column, one share at ``π = 1/k``,
    ``√((π p(1−p) + (1−π) q(1−q))/n)/(p−q)``; for a Laplace column, the mean, ``b√2/√n``.
    ``verdict`` says it in a sentence (the ± it quotes is that standard error) and ``rating`` is
    ``"noise"``, ``"rough"`` or ``"useful"``, from the 95 % margin ``1.96 × typical_error``
    against the quantity's natural size (see :data:`NOISE_RATIO`):

    * against the average share ``1/k``: from 1 up the interval around a typical share reaches 0,
      so the buyer cannot tell a common category from an absent one — mostly noise; under 0.2 a
      typical share is known to within ±20 % of itself — useful; rough in between;
    * for a Laplace column, against half the declared range (the same cut-offs: from 1 up the
      mean cannot be placed in either half of its range; under 0.2 it is known to ±10 % of it).

    ``n_rows`` is the owner's row count: the table is for the owner only. When the schema names
    a privacy unit, give the rows the copy keeps (:func:`~dpcore.release.contributions.kept_rows`):
    the buyer estimates from those. ``epsilon`` stays each column's ε per value; a person's up to
    ``k`` rows add up to ``k`` times it (:func:`~dpcore.release.padding.copy_epsilon`). Columns the plan
    drops or keeps, and columns with a problem in the plan (see :meth:`ReleasePlan.problems`),
    get no row.

    Examples
    --------
    >>> from dpcore.release.plan import ColumnPlan
    >>> from dpcore.tables.schema import ColumnSpec
    >>> schema = Schema([ColumnSpec("smoker", kind="categorical", categories=["no", "yes"], may_be_missing=False)])
    >>> plan = ReleasePlan([ColumnPlan("smoker", "k-ary", epsilon=0.025)])
    >>> usefulness(plan, schema, 1000)["rating"].tolist()
    ['noise']
    """
    if isinstance(n_rows, bool) or not isinstance(n_rows, (int, np.integer)) or n_rows < 1:
        raise ValueError(f"n_rows must be a whole number >= 1, got {n_rows!r}")
    rows = []
    for index, entry in enumerate(plan.columns):
        if entry.mechanism not in RANDOMISED or column_problems(entry, schema):
            continue
        t = treatment(index, entry, schema[entry.column])
        if t.mechanism == "laplace":
            error = mean_std_error(t.scale, int(n_rows))
            lower, upper, _unused = t.laplace_domain()
            level, sentence = verdict(t.name, error, lower=lower, upper=upper)
        else:
            rr = KaryRandomizedResponse(t.epsilon, t.k)
            error = float(rr.share_std_error(1.0 / t.k, int(n_rows)))
            level, sentence = verdict(t.name, error, k=t.k)
        rows.append(dict(zip(USEFULNESS_COLUMNS, [t.name, t.epsilon, error, sentence, level], strict=True)))
    return pd.DataFrame(rows, columns=USEFULNESS_COLUMNS)


def usefulness_summary(table: pd.DataFrame) -> str:
    """One sentence about the whole copy, from :func:`usefulness`'s table."""
    if table.empty:
        return _("The plan randomises no column, so there is nothing for a buyer to estimate.")
    ratings = dict(zip(table["column"], table["rating"], strict=True))
    if all(r == "useful" for r in ratings.values()):
        which = (
            _("the only randomised column")
            if len(ratings) == 1
            else _("all {count} randomised columns").format(count=len(ratings))
        )
        return _("Useful: the buyer's error will be small in {which}.").format(which=which)

    def names(level: str) -> str:
        found = [f"'{c}'" for c, r in ratings.items() if r == level]
        if len(found) > 5:
            found = found[:4] + [_("{count} more").format(count=len(found) - 4)]
        return found[0] if len(found) == 1 else ", ".join(found[:-1]) + _(" and ") + found[-1]

    counts = collections.Counter(ratings.values())
    parts = []
    if counts["noise"]:
        advice = (
            _("raise its ε, coarsen it or drop it") if counts["noise"] == 1 else _("raise their ε, coarsen them or drop them")
        )
        parts.append(_("mostly noise for {names} ({advice})").format(names=names("noise"), advice=advice))
    if counts["rough"]:
        parts.append(_("rough for {names} (a rough picture only)").format(names=names("rough")))
    if counts["useful"]:
        parts.append(
            _("useful for the other column")
            if counts["useful"] == 1
            else _("useful for the other {useful}").format(useful=counts["useful"])
        )
    text = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
    return _("At these ε the copy is {text}.").format(text=text)


def mostly_noise(table: pd.DataFrame) -> bool:
    """Whether the verdict says "mostly noise" for most (more than half) of the randomised columns of :func:`usefulness`'s table.

    Such a copy spends budget on little a buyer can use: the app asks the owner to type
    :data:`NOISE_CONFIRMATION` and the command line wants ``--accept-noise`` before releasing it.

    >>> mostly_noise(pd.DataFrame({"rating": ["noise", "noise", "useful"]})), mostly_noise(pd.DataFrame({"rating": []}))
    (True, False)
    """
    ratings = table["rating"]
    return bool(len(ratings)) and 2 * int((ratings == "noise").sum()) > len(ratings)


def noise_advice(table: pd.DataFrame) -> str:
    """What the owner can do instead of releasing a copy that is mostly noise (the way out, in one sentence)."""
    noisy = int((table["rating"] == "noise").sum())
    return _(
        "That is {noisy} of its {count} randomised columns, so the copy would spend budget on little a buyer can use. "
        "Drop columns so the others get more ε each, raise their ε if the budget allows, or sell a synthetic copy "
        "instead, which keeps the relations between columns far better at the same ε."
    ).format(noisy=noisy, count=len(table))


def noise_confirmed(typed: str) -> bool:
    """Whether the owner typed the confirmation word (in the page's language, or in English), case, spaces and the
    Unicode form of accented letters aside."""

    def folded(text: str) -> str:
        return unicodedata.normalize("NFC", text.strip()).casefold()

    word = folded(typed)
    return bool(word) and word in {folded(_(NOISE_CONFIRMATION)), NOISE_CONFIRMATION}
