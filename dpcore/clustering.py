"""Find groups in a table: the charged fit of the grid density clustering, its map, its card, and the owner's checks.

:func:`find_groups` is the one way a group map is made for the owner — by the Groups page and
by ``dpcore cluster`` alike — and it follows :func:`dpcore.training.train`'s budget rule: the
ledger is checked before the fit and charged **after** it and **before** anything about the
map is returned. A fit that fails charges nothing.

The release is the map (:func:`map_csv`, :func:`map_json`, :func:`group_card`): each cell's
interval, noisy count and group. A map laid over bounds read from the data is the owner's to
look at, never to release: those three refuse it with the sentence every artefact uses
(:func:`~dpcore.tables.schema.check_releasable`), since its cells would publish the data's extremes. Everything computed on the owner's rows with the map —
:func:`owner_labels` (which group each row falls in) and :func:`compare_with_baselines`
(agreement with k-means and DBSCAN fitted on the raw rows) — is for the owner's eyes only: it is
never charged, never written into the map or the card.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import Any

import numpy as np
import pandas as pd

from dpcore.budget.accountant import ADD_REMOVE, UNITS, BudgetLedger, Charge, convert, fmt
from dpcore.budget.persons import bound_contributions, per_row, unit_problems
from dpcore.exceptions import DataError
from dpcore.i18n import N_, _, amount, integer, language, percent, short
from dpcore.models.clustering import AUTO_SHARE, NO_GROUP, DPGridDensityClustering, grid_problem
from dpcore.models.registry import ModelContext, get, privacy_argument
from dpcore.release.writing import escape_label
from dpcore.tables.schema import Schema, check_releasable, normalise_numeric
from dpcore.validation import Bounds, epsilon_decimal

MODEL = "dp_grid_clustering"
BASELINES = ("dpl_kmeans", "sk_kmeans", "sk_dbscan")
#: The owner's comparison fits the baselines on at most this many rows (a random sample): DBSCAN is quadratic at worst.
COMPARE_ROWS = 20_000
#: Kept in English in the map's JSON; ``_(SEEDED_WARNING)`` where a person reads it.
SEEDED_WARNING = N_("Reproducible demo seed — do not release this map.")


@dataclass
class GroupMap:
    """A group map found and paid for, with what only its owner may look at.

    ``model`` is the fitted :class:`~dpcore.models.clustering.DPGridDensityClustering`; its map
    (cells, noisy counts, groups) is the DP release. ``epsilon`` is per person: with
    ``rows_per_person`` = k > 1 the map was fitted at ε/k per row. ``declared`` holds the
    declarations of ``features`` the map was laid with (its privacy line names where each domain
    came from; a domain read from the data keeps the map on the owner's screen). ``details`` (rows
    used, rows left out by the per-person bound) are counted on raw rows: owner's eyes only.
    """

    model: DPGridDensityClustering
    features: list[str]
    bounds: list[tuple[float, float]]
    epsilon: float
    seeded: bool = False
    rows_per_person: int = 1
    declared: Schema = field(default_factory=lambda: Schema([]))
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def read_from_data(self) -> list[str]:
        """The map's columns whose bounds were read from the data when it was fitted (it cannot be released)."""
        return self.declared.read_from_data(self.features)

    @property
    def n_clusters(self) -> int:
        return self.model.n_clusters_

    @property
    def grid(self) -> str:
        """``"32 × 32"``."""
        return " × ".join(str(s) for s in self.model.grid_shape_)

    @property
    def resolution_note(self) -> str:
        """How the resolution was chosen, in words."""
        noisy_rows = self.model.noisy_rows_
        if noisy_rows is None:
            return _("declared")
        return _("chosen from a noisy row count (≈ {rows}, {share} of ε)").format(
            rows=integer(max(noisy_rows, 0)), share=percent(AUTO_SHARE)
        )


def clustering_columns(schema: Schema) -> list[str]:
    """The columns a map can use: numeric features or target with bounds (never the person's identifier).

    Bounds read from the data count too, for a map on the owner's screen only: :func:`map_csv`,
    :func:`map_json` and :func:`group_card` refuse to release it.
    """
    return [
        c.name
        for c in schema.columns
        if c.role in ("feature", "target") and c.kind == "numeric" and not c.problems() and c.name != schema.privacy_unit
    ]


def check_features(schema: Schema, features: list[str], frame: pd.DataFrame | None = None) -> None:
    """Raise :class:`DataError` with a sentence when ``features`` cannot be mapped; never a cell value."""
    allowed = clustering_columns(schema)
    wrong = [f for f in features if f not in allowed]
    if wrong:
        raise DataError(
            _(
                "These columns cannot be used to find groups: {join}. Choose numeric columns whose bounds are "
                "declared (on the Data page, or in the schema file)."
            ).format(join=", ".join(wrong))
        )
    if len(set(features)) != len(features):
        raise DataError(_("Choose each column once."))
    problem = grid_problem(None, len(features))
    if problem:
        raise DataError(problem)
    if frame is not None:
        problems = Schema([schema[f] for f in features]).problems(frame)
        if schema.privacy_unit is not None:
            role = schema[schema.privacy_unit].role if schema.privacy_unit in schema.names else None
            problems += unit_problems(schema.privacy_unit, schema.rows_per_person, role, frame)
        if problems:
            raise DataError(" ".join(problems))


def feature_matrix(frame: pd.DataFrame, schema: Schema, features: list[str]) -> np.ndarray:
    """The chosen columns in their units, clipped to the declared bounds, a missing value at the declared fill."""
    columns = []
    for name in features:
        spec = schema[name]
        lower, upper = spec.bounds
        columns.append(lower + normalise_numeric(frame[name], spec) * (upper - lower))
    return np.column_stack(columns) if columns else np.empty((len(frame), 0))


def find_groups(
    frame: pd.DataFrame,
    schema: Schema,
    features: list[str],
    epsilon: float,
    ledger: BudgetLedger,
    *,
    resolution: int | None = None,
    min_pts: float | None = None,
    neighbours: str | None = None,
    count_noise: str = "geometric",
    seed: int | None = None,
) -> GroupMap:
    """Fit the group map of ``features`` at ``epsilon`` (per person), charge ``ledger``, and return it.

    With a privacy-unit column, at most ``schema.rows_per_person`` rows of each person are kept
    (a random subset) and the map is fitted at ε/k per row. ``seed`` is for tests and demos only:
    the ledger line says so and the map must not be released.

    Raises
    ------
    DataError
        If a column cannot be used or the grid would be too large (nothing fitted or charged).
    BudgetExceededError
        If the ledger cannot pay ``epsilon`` (nothing fitted or charged).
    UnitOfProtectionError
        If the ledger's earlier spends count people differently (nothing fitted or charged).
    """
    check_features(schema, features, frame)
    problem = grid_problem(resolution, len(features))
    if problem:
        raise DataError(problem)
    k, unit_column = (schema.rows_per_person, schema.privacy_unit) if schema.privacy_unit is not None else (1, None)
    charge = Charge(
        f"Find groups in {', '.join(features)}",
        epsilon,
        privacy_unit=unit_column,
        rows_per_person=k,
        seeded=seed is not None,
        mechanism=DPGridDensityClustering.__name__,
        released="a group map",
        action=N_("Finding groups"),
        undone=N_("computed"),
    )
    kept = frame if unit_column is None else frame[bound_contributions(frame[unit_column], k, seed)]
    X = feature_matrix(kept, schema, features)
    params = {
        name: value
        for name, value in (("resolution", resolution), ("min_pts", min_pts), ("neighbours", neighbours))
        if value is not None
    }
    bounds = [schema[f].bounds for f in features]
    context = ModelContext(
        n_features=len(features),
        epsilon=epsilon,
        bounds=_lower_upper(bounds),
        count_noise=count_noise,
        random_state=seed,
        params=params,
        rows_per_person=k,
    )
    model = get(MODEL).make(context)
    assert isinstance(model, DPGridDensityClustering)
    with ledger.charging(charge):
        model.fit(pd.DataFrame(X, columns=features))
    declared = Schema([replace(schema[f]) for f in features])
    details = {"rows_used": len(kept), "rows_over_bound": len(frame) - len(kept)}
    return GroupMap(model, list(features), bounds, epsilon, seed is not None, k, declared, details)


def _lower_upper(bounds: list[tuple[float, float]]) -> Bounds:
    """Per-column ``(lower, upper)`` pairs as the ``(lowers, uppers)`` an estimator takes."""
    return np.array([b[0] for b in bounds]), np.array([b[1] for b in bounds])


# --- the release: the map, as a table, JSON and a card --------------------------------------


def map_table(found: GroupMap) -> pd.DataFrame:
    """The map, one row per cell: each column's interval, the noisy count and the group (−1: none)."""
    return found.model.cells_.copy()


def map_csv(found: GroupMap) -> bytes:
    """The map as CSV, column names made spreadsheet-safe (numbers only in the cells).

    Raises :class:`DataError` when its bounds were read from the data (:func:`~dpcore.tables.schema.check_releasable`).
    """
    check_releasable(found.read_from_data)
    table = map_table(found)
    table.columns = [escape_label(c) for c in table.columns]
    return table.to_csv(index=False).encode("utf-8")


def map_json(found: GroupMap, unit: str = ADD_REMOVE) -> str:
    """The map with its grid, threshold and guarantee, as JSON; ``cells`` holds one list per column of :func:`map_table`.

    Raises :class:`DataError` when its bounds were read from the data (:func:`~dpcore.tables.schema.check_releasable`).
    """
    check_releasable(found.read_from_data)
    with language("en"):  # the JSON is for machines: its words stay English whatever the reader's language
        return _map_document(found, unit)


def _map_document(found: GroupMap, unit: str) -> str:
    model = found.model
    cells = {name: values.tolist() for name, values in map_table(found).items()}
    document = {
        "what": "A differentially private map of dense groups: every cell of a grid laid from declared bounds, with its "
        "noisy row count and its group (cluster -1: in no group). No row of the table is in it.",
        "privacy": _privacy_words(found, unit),
        "columns": [
            {"name": f, "lower": b[0], "upper": b[1], "cells": int(s)}
            for f, b, s in zip(found.features, found.bounds, model.grid_shape_, strict=True)
        ],
        "resolution": found.resolution_note,
        "dense_from_noisy_count": model.threshold_,
        "neighbours": model.neighbours,
        "count_noise": model.count_noise,
        "groups": [{"cluster": g, "noisy_rows": float(size)} for g, size in enumerate(model.cluster_sizes_)],
        "cells": cells,
        "warnings": [SEEDED_WARNING] if found.seeded else [],
    }
    return json.dumps(document, ensure_ascii=False)


def _privacy_words(found: GroupMap, unit: str) -> str:
    k = found.rows_per_person
    if k > 1:
        text = _(
            "ε = {epsilon} (pure ε-differential privacy, one person's rows added or removed; at most {k} rows of a person "
            "were used and the map was fitted at ε = {row_epsilon} per row)"
        ).format(epsilon=short(found.epsilon), k=k, row_epsilon=short(float(f"{per_row(found.epsilon, 0.0, k)[0]:.4g}")))
    else:
        text = _("ε = {epsilon} (pure ε-differential privacy, add/remove-one neighbours)").format(epsilon=short(found.epsilon))
    spent, _delta = convert(epsilon_decimal(found.epsilon), Decimal(0), ADD_REMOVE, unit)
    words = [
        text + ".",
        _("In the dataset's unit ({unit}) it counts as ε = {spent}.").format(unit=_(UNITS[unit]), spent=amount(fmt(spent))),
        found.declared.domain_words(found.features),
    ]
    if found.seeded:
        words.append(_(SEEDED_WARNING))
    return " ".join(words)


def group_card(found: GroupMap, unit: str = ADD_REMOVE) -> str:
    """A short Markdown card for the map: its guarantee, declared columns, grid, threshold and privacy argument.

    Everything in it comes from the declarations the map was laid with and what it spent.
    Raises :class:`DataError` when its bounds were read from the data (:func:`~dpcore.tables.schema.check_releasable`).
    """
    check_releasable(found.read_from_data)
    model = found.model
    sizes = "; ".join(integer(size) for size in model.cluster_sizes_[:10]) + (" …" if found.n_clusters > 10 else "")
    dense = (
        _(
            "- **Dense cells**: noisy count at least {threshold} (the larger of MinPts = {min_pts} and the noise floor); "
            "cells touching at a corner form one group."
        )
        if model.neighbours == "corners"
        else _(
            "- **Dense cells**: noisy count at least {threshold} (the larger of MinPts = {min_pts} and the noise floor); "
            "cells touching at a face form one group."
        )
    )
    groups = (
        _("- **Groups**: {count} (noisy rows, largest first: {sizes}).") if found.n_clusters else _("- **Groups**: {count}.")
    ).format(count=found.n_clusters, sizes=sizes)
    lines = [
        _("# Group map card: {name}").format(name=_(get(MODEL).name)),
        "",
        _(
            "*Dense groups in the declared columns, found from a noisy count of every grid cell; the map is released, no "
            "person's group is.*"
        ),
        "",
        _("- **Privacy**: {words}").format(words=_privacy_words(found, unit)),
        _("- **Grid**: {grid} cells, resolution {resolution}.").format(grid=found.grid, resolution=found.resolution_note),
        dense.format(threshold=short(float(f"{model.threshold_:.4g}")), min_pts=short(model.min_pts)),
        groups,
        _("- **Count noise**: {noise}.").format(noise=model.count_noise),
        "",
        _("## Declared bounds (public)"),
        "",
    ]
    for name, side in zip(found.features, model.grid_shape_, strict=True):
        c = found.declared[name]
        lower, upper = c.bounds
        lines.append(
            _("- `{name}`: [{lower}, {upper}], {cells} cells of {side}").format(
                name=name, lower=short(lower), upper=short(upper), cells=side, side=short(float(f"{(upper - lower) / side:.4g}"))
            )
            + (f" — {c.source}" if c.source else "")
        )
    lines += ["", _("## Privacy argument"), "", privacy_argument(MODEL), ""]
    if found.seeded:
        lines.append(f"> **{_(SEEDED_WARNING)}**")
    return "\n".join(lines) + "\n"


# --- the owner's eyes only -----------------------------------------------------------------


def owner_labels(found: GroupMap, frame: pd.DataFrame, schema: Schema) -> np.ndarray:
    """The group of each of the owner's rows (−1: none), looked up in the map: owner's eyes only, never released."""
    return found.model.predict(pd.DataFrame(feature_matrix(frame, schema, found.features), columns=found.features))


def compare_with_baselines(
    found: GroupMap,
    frame: pd.DataFrame,
    schema: Schema,
    *,
    n_clusters: int | None = None,
    max_rows: int = COMPARE_ROWS,
    seed: int | None = 0,
) -> pd.DataFrame:
    """The map beside diffprivlib's DP k-means at the same ε and non-private k-means and DBSCAN: owner's eyes only.

    All are fitted on the same rows (a random sample of at most ``max_rows``), scaled by the
    declared bounds. k-means is asked for ``n_clusters`` groups (default: as many as the map
    found, at least 2); DBSCAN's Eps is one cell side of the map and its MinPts the map's.
    Agreement is the adjusted Rand index against non-private DBSCAN, rows in no group counting as
    one group of their own. Nothing here is charged: none of it leaves the owner's screen.
    """
    from sklearn.metrics import adjusted_rand_score

    rng = np.random.default_rng(seed)
    rows = (
        rng.choice(len(frame), size=min(len(frame), max_rows), replace=False) if len(frame) > max_rows else np.arange(len(frame))
    )
    X = feature_matrix(frame.iloc[np.sort(rows)], schema, found.features)
    model = found.model
    k = max(int(n_clusters or found.n_clusters), 2)
    context = ModelContext(
        n_features=X.shape[1],
        epsilon=found.epsilon,
        bounds=_lower_upper(found.bounds),
        random_state=seed,
        rows_per_person=found.rows_per_person,
        params={"n_clusters": k, "resolution": max(model.grid_shape_), "min_pts": model.min_pts},
    )
    labels = {MODEL: model.predict(pd.DataFrame(X, columns=found.features))}
    seconds: dict[str, float] = {MODEL: float("nan")}
    for key in BASELINES:
        started = time.perf_counter()
        baseline: Any = get(key).make(context)  # a clusterer: fit_predict, not the Estimator protocol's predict
        labels[key] = np.asarray(baseline.fit_predict(X))
        seconds[key] = time.perf_counter() - started
    reference = labels["sk_dbscan"]
    table = []
    for key, found_labels in labels.items():
        spec = get(key)
        groups = len(set(found_labels.tolist()) - {NO_GROUP})
        table.append(
            {
                "method": spec.name,
                "kind": "ε-DP" if spec.private else "non-private",
                "ε": found.epsilon if spec.private else np.nan,
                "groups": groups,
                "share of rows in a group": float(np.mean(found_labels != NO_GROUP)),
                "agreement with DBSCAN (ARI)": float(adjusted_rand_score(reference, found_labels)),
                "seconds": seconds[key],
            }
        )
    return pd.DataFrame(table)
