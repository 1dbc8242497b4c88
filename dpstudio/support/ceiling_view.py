"""The Attack page of an analyst: what their slice's ε allows any attacker, drawn from the bounds alone.

Every figure here is a formula of ε and δ (:mod:`dpcore.attacks.statistics`,
:func:`~dpcore.attacks.reconstruction.copy_ceiling`), true of every table: nothing is read from the
owner's rows, so nothing here is charged. The owner's attacks score guesses against the rows
(who was in, what each value was) and stay theirs.
"""

from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd
import streamlit as st

from dpcore.attacks.reconstruction import copy_ceiling
from dpcore.attacks.statistics import LOW_FPR, advantage_ceiling, auc_ceiling, tpr_ceiling
from dpcore.i18n import _, percent, short
from dpstudio.support.charts import localized, roc_lines
from dpstudio.support.state import StudioState

#: The ε values offered beside the slice's own, as on the owner's Attack page.
EPSILONS = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0)
#: How often the reconstruction sentence's attacker is right without any release: one guess in ten.
PRIOR_SUCCESS = 0.1


def attack_page(state: StudioState) -> None:
    """The ROC ceiling and three figures at the analyst's slice (or another ε), and why the owner's attacks are not here."""
    mine = state.ledger().my_slice()
    granted = float(mine.epsilon) if mine is not None else 1.0
    delta = float(mine.delta) if mine is not None else 0.0
    st.info(
        _(
            "The attacks of this page run on the table's rows: they score each guess against who really was in it and "
            "what their values were, so only the dataset's owner may run them. What no attack can pass needs no data: it "
            "follows from ε alone, and holds for this table and every other."
        ),
        icon=":material/lock:",
    )
    st.write(
        _(
            "Everything you can ever make from your slice, together, is (ε = {epsilon}, δ = {delta})-differentially "
            "private: the ceiling below at your slice's ε bounds an attacker who holds all of it."
        ).format(epsilon=short(granted), delta=f"{delta:g}")
    )
    choices = sorted({*EPSILONS, granted})
    epsilon = float(st.select_slider(_("ε"), choices, value=granted, format_func=short, key="ceiling_epsilon"))
    left, middle, right = st.columns(3)
    left.metric(_("Best possible AUC"), percent(auc_ceiling(epsilon, delta), 1))
    middle.metric(_("Best possible advantage"), percent(advantage_ceiling(epsilon, delta), 1))
    right.metric(
        _("Members spotted at {rate} false alarms, at most").format(rate=percent(LOW_FPR)),
        percent(float(tpr_ceiling(LOW_FPR, epsilon, delta)), 1),
    )
    st.altair_chart(localized(ceiling_chart(epsilon, delta)), width="stretch")
    st.write(
        _(
            "Guessing a value back: an attacker right {prior} of the time without your releases is right at most {ceiling} "
            "of the time with them (ε = {epsilon})."
        ).format(
            prior=percent(PRIOR_SUCCESS), ceiling=percent(copy_ceiling(PRIOR_SUCCESS, epsilon, delta)), epsilon=short(epsilon)
        )
    )


def ceiling_chart(epsilon: float, delta: float = 0.0) -> alt.Chart:
    """The highest ROC curve an (ε, δ)-DP release allows any membership attack, beside the chance line."""
    rates = np.linspace(0.0, 1.0, 201)
    data = pd.concat(
        [
            pd.DataFrame(
                {"fpr": rates, "tpr": tpr_ceiling(rates, epsilon, delta), "line": _("the most ε allows"), "kind": "ceiling"}
            ),
            pd.DataFrame({"fpr": rates, "tpr": rates, "line": _("guessing"), "kind": "chance"}),
        ]
    )
    return roc_lines(data).properties(
        height=380, title=_("No membership attack can pass the upper line at ε = {epsilon}").format(epsilon=short(epsilon))
    )
