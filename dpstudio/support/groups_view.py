"""The Groups page's sections: columns and grid, the charged fit, the map, its downloads, and the owner-only views.

The map found on the page is kept in the session state and the on-disk workspace (a reload
does not lose a map that was paid for), tied to the dataset and declarations it was found
with: a map of another table is never shown.
"""

from __future__ import annotations

from dataclasses import dataclass

import altair as alt
import numpy as np
import pandas as pd
import streamlit as st

from dpcore.budget.accountant import BudgetLedger
from dpcore.clustering import (
    COMPARE_ROWS,
    SEEDED_WARNING,
    GroupMap,
    compare_with_baselines,
    feature_matrix,
    find_groups,
    group_card,
    map_csv,
    map_json,
    map_table,
    owner_labels,
)
from dpcore.i18n import N_, _, integer, ngettext, percent, short
from dpcore.models.clustering import AUTO_SHARE, MAX_CELLS, MAX_FEATURES, MIN_FEATURES, NO_GROUP, grid_problem
from dpcore.tables.schema import Schema
from dpstudio.support.charts import localized
from dpstudio.support.data_view import release_refused
from dpstudio.support.language import keyed
from dpstudio.support.session import recall_result, remember_result
from dpstudio.support.state import StudioState
from dpstudio.support.training import DEMO_SEED, per_person_note, spent_heading

OWNER_ROWS_SHOWN = 5_000
NO_GROUP_LABEL = N_("no group")
NO_GROUP_COLOUR = "#e6e6e6"
PALETTE = [
    "#4c78a8",
    "#f58518",
    "#54a24b",
    "#e45756",
    "#72b7b2",
    "#b279a2",
    "#eeca3b",
    "#9d755d",
    "#ff9da6",
    "#2f4b7c",
    "#bab0ac",
    "#88d27a",
    "#d67195",
    "#439894",
    "#83bcb6",
    "#a0cbe8",
    "#ffbf79",
    "#8cd17d",
    "#b6992d",
    "#499894",
]


@dataclass
class GroupsResult:
    """The map found on this page for one table, and the owner's comparison once it has been run."""

    fingerprint: str
    found: GroupMap
    comparison: pd.DataFrame | None = None


def current(state: StudioState) -> GroupsResult | None:
    """The map found for the table in use (this session, or before a reload), if any."""
    result = recall_result(state, "groups", GroupsResult)
    return result if result is not None and result.fingerprint == state.dataset.declared_key else None


def find_in_session(state: StudioState, columns: list[str], epsilon: float, grid: dict, seeded: bool) -> GroupsResult:
    """Find and pay for the map of the session's table with the engine's :func:`~dpcore.clustering.find_groups`."""
    dataset = state.dataset
    found = find_groups(
        dataset.frame,
        dataset.schema,
        columns,
        epsilon,
        state.ledger(),
        count_noise=state.count_noise,
        seed=DEMO_SEED if seeded else None,
        **grid,
    )
    state.groups = GroupsResult(state.dataset.declared_key, found)
    remember_result(state, "groups")
    return state.groups


# --- choosing ---------------------------------------------------------------------------------


def choose_columns(candidates: list[str], fingerprint: str) -> list[str] | None:
    """2–4 numeric columns with declared bounds (None, with a sentence, until enough are chosen)."""
    columns = st.multiselect(
        _("Columns to find groups in ({least} to {most})").format(least=MIN_FEATURES, most=MAX_FEATURES),
        candidates,
        default=candidates[:2],
        max_selections=MAX_FEATURES,
        key=f"groups_columns_{fingerprint}",
        help=_("Numeric columns whose bounds you declared on the Data page; the grid is laid over those bounds."),
    )
    if len(columns) < MIN_FEATURES:
        st.info(_("Choose at least {count} columns.").format(count=MIN_FEATURES))
        return None
    return columns


def grid_settings(schema: Schema, columns: list[str]) -> dict | None:
    """Resolution, MinPts and neighbours, in a closed expander (None, with a sentence, if the grid is too large)."""
    with st.expander(_("Grid settings"), expanded=False):
        automatic = st.toggle(
            _("Choose the resolution for me (spends {share} of this ε on a noisy row count)").format(share=percent(AUTO_SHARE)),
            value=True,
            key="groups_auto",
        )
        grid: dict = {}
        if not automatic:
            grid["resolution"] = int(
                st.number_input(
                    _("Cells per column"),
                    min_value=2,
                    max_value=1024,
                    value=32,
                    step=1,
                    key="groups_resolution",
                    help=_("About the published DBSCAN's Eps: one cell side."),
                )
            )
            sides = []
            for name in columns:
                lower, upper = schema[name].bounds
                side = (upper - lower) / grid["resolution"]
                sides.append(f"{name}: {short(float(f'{side:.4g}'))}")
            st.caption(
                _("Cell sides — {sides}. Cells in all: {cells} (at most {most}).").format(
                    sides="; ".join(sides), cells=integer(grid["resolution"] ** len(columns)), most=integer(MAX_CELLS)
                )
            )
        grid["min_pts"] = float(
            st.number_input(
                _("MinPts: rows a dense cell holds (by its noisy count)"),
                min_value=0.0,
                value=5.0,
                step=1.0,
                key="groups_min_pts",
                help=_(
                    "The threshold used is this or the noise floor, whichever is higher: "
                    "at the noise floor an empty cell passes by chance in only one grid in twenty."
                ),
            )
        )
        touching = {"corners": _("at a corner or a face"), "faces": _("at a face only")}
        grid["neighbours"] = st.radio(
            _("Dense cells form one group when they touch"),
            ["corners", "faces"],
            horizontal=True,
            format_func=touching.get,
            key=keyed("groups_neighbours"),
        )
    problem = grid_problem(grid.get("resolution"), len(columns))
    if problem:
        st.error(problem)
        return None
    return grid


# --- the result -----------------------------------------------------------------------------


def header(found: GroupMap, ledger: BudgetLedger) -> None:
    """What was found and what it cost."""
    groups = ngettext("{count} group", "{count} groups", found.n_clusters).format(count=found.n_clusters)
    st.subheader(spent_heading(groups, found.epsilon, ledger))
    if found.seeded:
        st.warning(_(SEEDED_WARNING), icon=":material/warning:")
    model = found.model
    st.caption(
        _(
            "Grid {grid} over {columns}, resolution {resolution}; a cell is dense from a noisy count of {threshold}; "
            "{noise} noise on every cell, empty ones included."
        ).format(
            grid=found.grid,
            columns=", ".join(found.features),
            resolution=found.resolution_note,
            threshold=short(float(f"{model.threshold_:.3g}")),
            noise=model.count_noise,
        )
    )
    if found.rows_per_person > 1:
        st.caption(per_person_note("map", found.epsilon, found.rows_per_person, found.details["rows_over_bound"]))


def _group_label(cluster: pd.Series) -> pd.Series:
    return cluster.map(lambda c: _(NO_GROUP_LABEL) if c == NO_GROUP else _("group {number}").format(number=int(c)))


def _colour(found: GroupMap, no_group: str = NO_GROUP_COLOUR) -> alt.Color:
    """One colour per group, the same on the map and on the owner's rows; grey for no group."""
    domain = [_(NO_GROUP_LABEL), *(_("group {number}").format(number=g) for g in range(found.n_clusters))]
    colours = [no_group, *(PALETTE[g % len(PALETTE)] for g in range(found.n_clusters))]
    return alt.Color(
        "group:N",
        title=_("group"),
        scale=alt.Scale(domain=domain, range=colours),
        legend=alt.Legend(orient="right", symbolLimit=25),
    )


def _axes(found: GroupMap) -> tuple[str, str, dict[str, int]]:
    """The two columns to draw, and the slice (cell number) of every other column."""
    names = found.features
    if len(names) == 2:
        return names[0], names[1], {}
    left, right = st.columns(2)
    x = left.selectbox(_("Across"), names, index=0, key="groups_x")
    y = right.selectbox(_("Up"), [n for n in names if n != x], index=0, key="groups_y")
    slices: dict[str, int] = {}
    counts = found.model.noisy_counts_
    for axis, (name, edges) in enumerate(zip(names, found.model.edges_, strict=True)):
        if name in (x, y):
            continue
        # Open on the slice with the most noisy rows (a sum over the released map: post-processing).
        fullest = int(np.argmax(counts.sum(axis=tuple(a for a in range(counts.ndim) if a != axis))))
        options = list(range(len(edges) - 1))
        slices[name] = st.select_slider(
            _("Slice of {column}").format(column=name),
            options,
            value=fullest,
            key=keyed(f"groups_slice_{name}"),
            format_func=lambda i, e=edges: _("{low} to {high}").format(
                low=short(float(f"{e[i]:.4g}")), high=short(float(f"{e[i + 1]:.4g}"))
            ),
        )
    return x, y, slices


def group_map(found: GroupMap) -> tuple[str, str]:
    """The released map as a heat map of cells coloured by group, with the noisy counts on hover; returns the axes drawn."""
    st.markdown("#### " + _("The map (what is released)"))
    x, y, slices = _axes(found)
    cells = map_table(found)
    for name, index in slices.items():
        edges = found.model.edges_[found.features.index(name)]
        cells = cells[np.isclose(cells[f"{name}_lower"], edges[index])]
    data = pd.DataFrame(
        {
            "x_lower": cells[f"{x}_lower"],
            "x_upper": cells[f"{x}_upper"],
            "y_lower": cells[f"{y}_lower"],
            "y_upper": cells[f"{y}_upper"],
            "noisy count": cells["noisy_count"],
            "group": _group_label(cells["cluster"]),
        }
    )
    (x_low, x_high), (y_low, y_high) = (found.bounds[found.features.index(x)], found.bounds[found.features.index(y)])
    chart = (
        alt.Chart(data)
        .mark_rect(stroke="white", strokeWidth=0.3)
        .encode(
            x=alt.X("x_lower:Q", title=x, scale=alt.Scale(domain=[x_low, x_high], nice=False)),
            x2="x_upper:Q",
            y=alt.Y("y_lower:Q", title=y, scale=alt.Scale(domain=[y_low, y_high], nice=False)),
            y2="y_upper:Q",
            color=_colour(found),
            tooltip=[
                alt.Tooltip("group:N", title=_("group")),
                alt.Tooltip("noisy count:Q", title=_("noisy count"), format=",.0f"),
                alt.Tooltip("x_lower:Q", title=_("{column} from").format(column=x), format=",.4g"),
                alt.Tooltip("x_upper:Q", title=_("{column} to").format(column=x), format=",.4g"),
                alt.Tooltip("y_lower:Q", title=_("{column} from").format(column=y), format=",.4g"),
                alt.Tooltip("y_upper:Q", title=_("{column} to").format(column=y), format=",.4g"),
            ],
        )
        .properties(height=520, title=_("Groups on a {grid} grid — hover a cell for its noisy count").format(grid=found.grid))
    )
    st.altair_chart(localized(chart), width="stretch")
    sizes = ", ".join(
        _("group {number}: ≈ {size}").format(number=g, size=integer(size))
        for g, size in enumerate(found.model.cluster_sizes_[:8])
    )
    st.caption(
        _("Noisy rows per group, largest first: {sizes}").format(sizes=sizes) + (" …" if found.n_clusters > 8 else "") + "."
    )
    return x, y


def no_groups(found: GroupMap) -> None:
    """The stated outcome when no cell cleared the threshold: no map of noise is drawn as if it were groups."""
    st.info(
        _(
            "No groups found at ε = {epsilon}: no cell's noisy count reached {threshold}, the count an empty cell "
            "passes by chance in only one grid in twenty. At this ε the noise hides any group, so no map is drawn. "
            "Spend more ε, choose a coarser grid, or fewer columns."
        ).format(epsilon=short(found.epsilon), threshold=short(float(f"{found.model.threshold_:.3g}"))),
        icon=":material/blur_on:",
    )


def downloads(state: StudioState, found: GroupMap, unit: str) -> None:
    """The map (CSV, JSON) and its card; no map file for a demo seed, nothing at all over bounds read from the data."""
    if found.read_from_data:
        release_refused(
            state,
            found.read_from_data,
            "groups_",
            _("The declarations are fixed: find the groups again to get a map you can share."),
        )
        return
    card = group_card(found, unit)
    with st.expander(_("Map card")):
        st.markdown(card)
    c1, c2, c3 = st.columns(3)
    if found.seeded:
        c1.button(_("Map (CSV) — disabled: demo seed"), disabled=True, help=_(SEEDED_WARNING))
        c2.button(_("Map (JSON) — disabled: demo seed"), disabled=True, help=_(SEEDED_WARNING))
    else:
        c1.download_button(
            _("Map (CSV)"),
            lambda: map_csv(found),
            file_name="group_map.csv",
            mime="text/csv",
            key="dl_map_csv",
            on_click="ignore",
        )
        c2.download_button(
            _("Map (JSON)"),
            lambda: map_json(found, unit),
            file_name="group_map.json",
            mime="application/json",
            key="dl_map_json",
            on_click="ignore",
        )
    c3.download_button(
        _("Map card (Markdown)"), card, file_name="group_map_card.md", mime="text/markdown", key="dl_map_card", on_click="ignore"
    )


# --- the owner's eyes only -------------------------------------------------------------------


def owner_rows(found: GroupMap, frame: pd.DataFrame, schema: Schema, x: str, y: str) -> None:
    """The owner's own rows (a random sample) on the map's axes, coloured by the group of their cell: never released."""
    st.markdown("#### " + _("Your rows in their groups — owner's eyes only"))
    labels = owner_labels(found, frame, schema)
    rng = np.random.default_rng(0)
    shown = np.sort(rng.choice(len(frame), size=min(len(frame), OWNER_ROWS_SHOWN), replace=False))
    points = feature_matrix(frame.iloc[shown], schema, [x, y])
    data = pd.DataFrame({"x": points[:, 0], "y": points[:, 1], "group": _group_label(pd.Series(labels[shown]))})
    (x_low, x_high), (y_low, y_high) = (found.bounds[found.features.index(x)], found.bounds[found.features.index(y)])
    chart = (
        alt.Chart(data)
        .mark_circle(size=14, opacity=0.6)
        .encode(
            x=alt.X("x:Q", title=x, scale=alt.Scale(domain=[x_low, x_high], nice=False)),
            y=alt.Y("y:Q", title=y, scale=alt.Scale(domain=[y_low, y_high], nice=False)),
            color=_colour(found, "#9e9e9e"),
        )
        .properties(
            height=420,
            title=_("{count} of your rows, coloured by the group of their cell (owner only)").format(count=integer(len(shown))),
        )
    )
    st.altair_chart(localized(chart), width="stretch")
    in_group = float(np.mean(labels != NO_GROUP)) if len(labels) else 0.0
    st.caption(
        _(
            "{share} of your rows fall in a group's cell. These labels are looked up in the map for you; they "
            "are not part of the map, its files or its card, and cost no budget."
        ).format(share=percent(in_group))
    )


def comparison(result: GroupsResult, frame: pd.DataFrame, schema: Schema) -> None:
    """The map beside diffprivlib's DP k-means and non-private k-means and DBSCAN: owner only, no budget."""
    st.markdown("#### " + _("The same question by other methods — owner's eyes only"))
    st.caption(
        _(
            "Computed on your raw rows, not part of the release, so it costs no budget: nothing here leaves your screen. "
            "diffprivlib's DP k-means runs at the same ε; scikit-learn's k-means and DBSCAN are non-private references "
            "(DBSCAN's Eps is one cell side, its MinPts the map's). Fitted on a random sample of at most {rows} rows, "
            "scaled by the declared bounds."
        ).format(rows=integer(COMPARE_ROWS))
    )
    if st.button(_("Compare with k-means and DBSCAN"), key="groups_compare"):
        with st.spinner(_("Fitting k-means and DBSCAN on your rows…")):
            try:
                result.comparison = compare_with_baselines(result.found, frame, schema)
            except Exception:
                st.error(_("The other methods could not be fitted on these columns; the map itself is unaffected."))
    if result.comparison is not None:
        st.dataframe(
            result.comparison,
            hide_index=True,
            width="stretch",
            column_config={
                "method": st.column_config.TextColumn(_("method")),
                "ε": st.column_config.NumberColumn(_("ε (blank: non-private)"), format="%g"),
                "groups": st.column_config.NumberColumn(_("groups")),
                "share of rows in a group": st.column_config.NumberColumn(_("share of rows in a group"), format="percent"),
                "agreement with DBSCAN (ARI)": st.column_config.NumberColumn(
                    _("agreement with DBSCAN (ARI)"),
                    format="%.2f",
                    help=_(
                        "Adjusted Rand index: 1 = the same groups, "
                        "0 = no better than chance. Rows in no group "
                        "count as one group."
                    ),
                ),
                "seconds": st.column_config.NumberColumn(_("seconds to fit"), format="%.2f"),
            },
        )
