"""Category lists an owner does not know, discovered privately: the values many people share.

Typing the list of every text column of a wide table by hand is the step owners skip by
declaring the lists "public" — which they are not when they were read from the data. This
module instead spends a stated (ε, δ) per column on a **stability histogram**
(:class:`~dpcore.mechanisms.stability.StabilityHistogram`, ``algorithms.md`` §11): the values
whose noisy count of people clears ``τ = 1 + ln(1/(2δ))/ε`` become the declared categories, and
every rarer value becomes "(other)".

Privacy argument
----------------
One column: missing values are left out (a filter on each record); each value is counted once
per person; the kept set is (ε, δ)-DP under add/remove (the mechanism's docstring). With a
privacy-unit column each person keeps at most k rows (a random subset, chosen from the unit
column only), a person's repeats of one value count once, and the histogram runs at the
per-row (ε, δ) whose group-privacy guarantee for k rows is the stated per-person (ε, δ)
(:func:`dpcore.budget.persons.per_row`): adding one row changes at most one count by 1. Columns
compose sequentially: ``m`` columns cost ``m·ε`` and ``m·δ``, checked against the ledger
before any value is counted and charged once, after every column is drawn, before anything is
returned. Sorting the kept values is post-processing.

Defaults, and what they were chosen on: ε = 0.1 per column (as for bounds) and a total
δ = 1e-6 split over the columns, a tenth of a new dataset's δ budget. On the bundled Adult table
(32,561 rows, 9 text columns; ``benchmarks/category_discovery.py``, 20 seeds) a value is kept
when more than about 155 people hold it: every value of race, sex, relationship and income comes
back, the others lose only their rarest values (at most 0.7 % of a column's rows go to "(other)"),
and native-country keeps its 3–5 largest countries (6 % in "(other)"). The same budget spread over
80 columns (ε = 0.0125 each) needs about 1,400 people per value and sends 5–24 % of most Adult
columns to "(other)": a wide table's discovery is coarse, a small table keeps little, and the page
states the number of people needed before the click.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pandas as pd

from dpcore.budget.accountant import BudgetLedger, Charge
from dpcore.budget.fingerprint import factorize
from dpcore.budget.persons import bound_contributions, check_unit_column, per_row, person_keys
from dpcore.exceptions import DataError
from dpcore.i18n import N_, _, integer, percent, short
from dpcore.mechanisms.stability import StabilityHistogram, stability_threshold
from dpcore.tables.matching import match_categories
from dpcore.tables.schema import OTHER_CATEGORY, ColumnSpec, Schema
from dpcore.validation import RandomStateLike, check_delta, check_epsilon, check_random_state

DEFAULT_EPSILON_PER_COLUMN = 0.1
DEFAULT_TOTAL_DELTA = 1e-6

#: The share of a column's present values that may fall outside its declared categories before the Data page stops
#: calling the schema complete. A list taken from a data dictionary covers nearly every value; a tenth in "(other)"
#: is a list typed by hand that misses common values (or a table read differently from how it was declared).
OTHER_SHARE_LIMIT = 0.10


def discoverable_columns(schema: Schema) -> list[str]:
    """Used text columns whose list is missing or was read from the data: what one click discovers."""
    return [
        c.name
        for c in schema.columns
        if c.kind == "categorical" and c.role in ("feature", "target") and (c.bounds_from_data or len(c.categories) < 2)
    ]


def value_labels(values: pd.Series, match_numbers: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """A label code per row (−1: missing) and the labels: the text of each value, one spelling per number.

    With ``match_numbers`` a value that reads as a number is labelled by the number
    (``0``, ``0.0`` and ``"00"`` are all ``"0"``), as the schema then matches them; only the
    distinct values are formatted, never each row.
    """
    codes, uniques = factorize(values)
    text = np.char.strip(np.asarray(pd.Index(uniques).astype(str), dtype=str)).astype(object)
    if match_numbers and text.size:
        numbers = np.asarray(pd.to_numeric(text, errors="coerce"), dtype=float)
        finite = np.isfinite(numbers)
        whole = finite & (numbers == np.round(numbers)) & (np.abs(numbers) < 2.0**53)
        text[whole] = numbers[whole].astype(np.int64).astype(str)
        text[finite & ~whole] = np.char.mod("%.15g", numbers[finite & ~whole])
    present = text != ""
    labels, label_of_unique = np.unique(text[present].astype(str), return_inverse=True)
    lookup = np.full(len(text) + 1, -1, dtype=np.int64)
    lookup[np.flatnonzero(present)] = label_of_unique
    return lookup[codes], labels


def _sorted_categories(labels: np.ndarray) -> list[str]:
    numbers = pd.to_numeric(pd.Series(labels, dtype=object), errors="coerce")
    if len(labels) and numbers.notna().all():
        return [str(labels[i]) for i in np.argsort(numbers.to_numpy(dtype=float), kind="stable")]
    return sorted(str(label) for label in labels)


def person_counts(label_codes: np.ndarray, n_labels: int, people: np.ndarray | None) -> np.ndarray:
    """How many people (or rows, without ``people``) hold each label; a person's repeats count once."""
    present = label_codes >= 0
    if people is None:
        return np.bincount(label_codes[present], minlength=n_labels)
    pairs = np.unique(np.stack([pd.factorize(people[present])[0], label_codes[present]]), axis=1)
    return np.bincount(pairs[1], minlength=n_labels)


def discovery_cost(n_columns: int, epsilon_per_column: float, total_delta: float) -> tuple[float, float]:
    """The (ε, δ) one click spends on ``n_columns`` columns."""
    return check_epsilon(epsilon_per_column, "epsilon_per_column") * n_columns, check_delta(total_delta, "total_delta")


def discover_categories(
    frame: pd.DataFrame,
    schema: Schema,
    columns: Iterable[str],
    epsilon_per_column: float,
    total_delta: float,
    ledger: BudgetLedger,
    random_state: RandomStateLike = None,
) -> dict[str, list[str]]:
    """DP category lists for text ``columns``, charged to ``ledger`` as one spend of (m·ε, δ).

    Returns ``{column: categories}`` (possibly fewer than two for a column no value of which
    many people share). Nothing is counted unless the whole spend fits, and nothing is
    returned unless it was charged.

    Raises
    ------
    BudgetExceededError
        If the dataset allows no δ, or the spend does not fit what is left.
    DataError
        If a column is not a text column of the table. Messages name columns, never a value.
    """
    columns = list(columns)
    if not columns:
        raise DataError(_("Choose at least one text column whose categories should be discovered."))
    for name in columns:
        if name not in frame.columns or name not in schema.names or schema[name].kind != "categorical":
            raise DataError(_("Column '{column}' is not a text (categorical) column of this table.").format(column=name))
    epsilon, delta = discovery_cost(len(columns), epsilon_per_column, total_delta)
    if not 0 < delta < 0.5:
        raise DataError(_("Discovering categories needs a δ above 0 and below 0.5."))
    k = schema.rows_per_person if schema.privacy_unit is not None else 1
    threshold = stability_threshold(*per_row(epsilon_per_column, delta / len(columns), k))
    charge = Charge(
        f"Discover the categories of {len(columns)} column(s) privately",
        epsilon,
        delta,
        privacy_unit=schema.privacy_unit,
        rows_per_person=k,
        mechanism=f"stability histogram (Laplace noise, threshold {threshold:.4g} per column)",
        released="categories of " + ", ".join(columns),
        action=N_("Discovering categories"),
        undone=N_("discovered"),
        alternative=N_("Or declare the lists yourself."),
    )
    with ledger.charging(charge):
        found = stable_categories(frame, schema, columns, epsilon_per_column, delta, random_state)[0]
    return found


def stable_categories(
    frame: pd.DataFrame,
    schema: Schema,
    columns: list[str],
    epsilon_per_column: float,
    total_delta: float,
    random_state: RandomStateLike = None,
) -> tuple[dict[str, list[str]], float]:
    """The drawing part of :func:`discover_categories`, with no ledger: ``({column: kept values}, per-row threshold)``.

    For tests and for callers that charge the spend themselves; each column is (ε, δ/m)-DP per
    person (the module's privacy argument), so the whole call is (m·ε, δ)-DP.
    """
    rng = check_random_state(random_state)
    k, units = 1, None
    if schema.privacy_unit is not None:
        check_unit_column(frame, schema.privacy_unit)
        k = schema.rows_per_person
        frame = frame[bound_contributions(frame[schema.privacy_unit], k, rng)]
        units = person_keys(frame[schema.privacy_unit])
    row_epsilon, row_delta = per_row(epsilon_per_column, total_delta / len(columns), k)
    histogram = StabilityHistogram(row_epsilon, row_delta, rng)
    found = {}
    for name in columns:
        codes, labels = value_labels(frame[name], schema[name].match_numbers)
        kept = histogram.keep(person_counts(codes, len(labels), units)) if len(labels) else np.zeros(0, dtype=bool)
        found[name] = _sorted_categories(labels[kept])
    return found, histogram.threshold


def people_needed(epsilon_per_column: float, total_delta: float, n_columns: int, rows_per_person: int = 1) -> int:
    """About how many people must share a value for it to be kept (the threshold, rounded up): public arithmetic."""
    row_epsilon, row_delta = per_row(epsilon_per_column, total_delta / max(n_columns, 1), rows_per_person)
    return int(np.ceil(stability_threshold(row_epsilon, row_delta)))


def apply_categories(schema: Schema, categories: dict[str, list[str]], epsilon_per_column: float, needed: int) -> None:
    """Write discovered lists into the schema as declarations; the rarer values are accepted as "(other)"."""
    for name, found in categories.items():
        spec = schema[name]
        spec.categories, spec.bounds_from_data, spec.accept_other = list(found), False, True
        spec.source = _(
            "discovered privately (ε = {epsilon}): values held by fewer than about {people} people are (other)"
        ).format(epsilon=short(epsilon_per_column), people=integer(needed))


# --- how much of a declared list's column becomes "(other)" (owner-only: raw rows) ---------------------------


def _used_categorical(frame: pd.DataFrame, schema: Schema) -> list[ColumnSpec]:
    return [
        spec
        for spec in schema.columns
        if spec.kind == "categorical"
        and spec.role in ("feature", "target")
        and spec.name in frame.columns
        and not spec.problems()
    ]


def other_shares(frame: pd.DataFrame, schema: Schema) -> dict[str, float]:
    """For each used categorical column, the share of its present values that become "(other)" (owner-only: raw rows)."""
    shares = {}
    for spec in _used_categorical(frame, schema):
        matched, _unused = match_categories(frame[spec.name], spec.categories, spec.match_numbers)
        present = int((matched != -2).sum())
        shares[spec.name] = float((matched == -1).sum() / present) if present else 0.0
    return shares


def other_share_problems(frame: pd.DataFrame, schema: Schema, limit: float = OTHER_SHARE_LIMIT) -> list[str]:
    """A sentence for each used categorical column whose declared list leaves more than ``limit`` of its values in "(other)".

    Computed on the raw table for the owner's screen only; the sentence names the column and the
    share, never a value. Columns the owner accepted (``accept_other``) are left out.
    """
    return [
        other_share_sentence(name, share, schema[name].role == "target")
        for name, share in mostly_other(frame, schema, limit).items()
    ]


def other_share_sentence(column: str, share: float, target: bool = False) -> str:
    """What the Data page says about a column whose declared list leaves ``share`` of it in "(other)" (a target's rows are dropped)."""
    if target:
        return _(
            "Column '{column}': {share} of its values are not in the declared categories, so their rows would be left out "
            "of every model. Fix the list, discover the categories privately, or keep the list as it is."
        ).format(column=column, share=percent(share))
    return _(
        "Column '{column}': {share} of its values are not in the declared categories and would become {other}. Fix the "
        "list, discover the categories privately, or keep the list as it is."
    ).format(column=column, share=percent(share), other=OTHER_CATEGORY)


def mostly_other(frame: pd.DataFrame, schema: Schema, limit: float = OTHER_SHARE_LIMIT) -> dict[str, float]:
    """``{column: share}`` for the columns :func:`other_share_problems` names (owner-only: raw rows)."""
    return {name: share for name, share in other_shares(frame, schema).items() if share > limit and not schema[name].accept_other}


def matched_by_number(frame: pd.DataFrame, schema: Schema) -> list[str]:
    """The used categorical columns where some value matched its category by number only (``0.0`` as ``"0"``)."""
    return [
        spec.name
        for spec in _used_categorical(frame, schema)
        if spec.match_numbers and match_categories(frame[spec.name], spec.categories, True)[1].any()
    ]
