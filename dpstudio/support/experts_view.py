"""The multiplicative-weights ensemble's view: how the experts' weights moved over the held-out rows."""

from __future__ import annotations

from typing import Any

import altair as alt
import pandas as pd
import streamlit as st

from dpcore.i18n import _


def weights_path_chart(records: list[dict[str, Any]]) -> alt.Chart:
    """One line per expert: its weight after every step (the records of ``weights_path_records``, all DP)."""
    frame = pd.DataFrame(records, columns=["step", "expert", "weight"])
    return (
        alt.Chart(frame, title=_("Weight of each expert after every step"))
        .mark_line(point=len(frame) <= 40)
        .encode(
            x=alt.X("step:Q", title=_("step of the held-out rows")),
            y=alt.Y("weight:Q", title=_("weight"), scale=alt.Scale(domain=[0, 1])),
            color=alt.Color("expert:N", title=_("expert")),
            tooltip=["step:Q", "expert:N", alt.Tooltip("weight:Q", format=".3f")],
        )
    )


def show_weights(records: list[dict[str, Any]]) -> None:
    """The experts' final weights, and their path when the streaming form drew one."""
    st.subheader(_("Inside the model"))
    final = pd.DataFrame(records).groupby("expert", sort=False)["weight"].last().reset_index()
    st.caption(
        _(
            "Each expert learned from its own part of the rows; their weights come from noisy totals of their errors on "
            "the held-out rows, so the weights are part of the private release."
        )
    )
    st.dataframe(final, hide_index=True, width="stretch")
    if len(records) > len(final):
        st.altair_chart(weights_path_chart(records), width="stretch")
        st.caption(
            _(
                "The first steps rest on few rows, so the noise moves the weights most there; the last step gives the "
                "weights the model uses."
            )
        )
