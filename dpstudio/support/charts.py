"""Charts in the reader's language: Vega's number format follows the session's locale (1.000,5 in Vietnamese)."""

from __future__ import annotations

import altair as alt
import pandas as pd
from babel.numbers import get_decimal_symbol, get_group_symbol

from dpcore.i18n import _, get_language


def localized(chart: alt.TopLevelMixin) -> alt.TopLevelMixin:
    """``chart`` with axis ticks and tooltips written with the language's decimal and thousands separators."""
    code = get_language()
    return chart.configure(
        locale={
            "number": {
                "decimal": get_decimal_symbol(code),
                "thousands": get_group_symbol(code),
                "grouping": [3],
                "currency": ["", ""],
            }
        }
    )


#: The attacks' colours on a ROC chart; a ``ceiling`` line is dashed black and the ``chance`` line dotted grey.
ATTACK_COLOURS = ["#d62728", "#ff7f0e", "#1f77b4", "#2ca02c", "#9467bd", "#8c564b"]


def roc_lines(data: pd.DataFrame, log: bool = False) -> alt.Chart:
    """ROC curves of ``data`` (``fpr``, ``tpr``, a ``line`` per curve and its ``kind``: attack, ceiling or chance),
    drawn alike wherever the app shows what an attack achieves beside what ε allows (size and title left to the page)."""
    lines = list(dict.fromkeys(data["line"]))
    colours, attack = [], 0
    for line in lines:
        kind = data.loc[data["line"] == line, "kind"].iloc[0]
        colours.append(
            "#000000" if kind == "ceiling" else "#888888" if kind == "chance" else ATTACK_COLOURS[attack % len(ATTACK_COLOURS)]
        )
        attack += kind == "attack"
    scale = alt.Scale(type="log", domain=[1e-3, 1]) if log else alt.Scale(domain=[0, 1])
    return (
        alt.Chart(data)
        .mark_line(clip=True)
        .encode(
            x=alt.X("fpr:Q", scale=scale, title=_("false alarms: share of non-members accused")),
            y=alt.Y("tpr:Q", scale=scale, title=_("share of members spotted")),
            color=alt.Color(
                "line:N",
                scale=alt.Scale(domain=lines, range=colours),
                title=None,
                legend=alt.Legend(orient="bottom", columns=2, labelLimit=0),
            ),
            strokeDash=alt.StrokeDash(
                "kind:N", scale=alt.Scale(domain=["attack", "ceiling", "chance"], range=[[1, 0], [6, 4], [2, 3]]), legend=None
            ),
            tooltip=[
                alt.Tooltip("line:N", title=_("curve")),
                alt.Tooltip("fpr:Q", title=_("false alarms"), format=".3f"),
                alt.Tooltip("tpr:Q", title=_("members spotted"), format=".3f"),
            ],
        )
    )
