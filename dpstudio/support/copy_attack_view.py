"""The Attack page's section on the synthetic copy: can its buyer tell who was in the table?

It calls :func:`dpcore.attacks.copy_membership.attack_copy` and shows what it returns with the
membership section's chart and sentences. Owner's eyes only: the copy made here is a
measurement, thrown away, and nothing is charged.
"""

from __future__ import annotations

from collections.abc import Callable

import streamlit as st

from dpcore.attacks import MembershipResult
from dpcore.attacks.copy_membership import MAX_PEOPLE, attack_copy
from dpcore.i18n import N_, _
from dpcore.release import default_plan
from dpstudio.support.attack_view import EPSILONS, AttackResults, _keep, _run, show_membership
from dpstudio.support.language import keyed
from dpstudio.support.state import StudioState

#: People of each role (member, non-member, reference) at each depth: the quick one is one small copy.
PEOPLE = {"quick": 500, "thorough": MAX_PEOPLE}
#: Named by what they do, not by a time: most of it is the one copy, whose time the progress bar tells.
DEPTHS = {"quick": N_("Quick (500 people of each kind)"), "thorough": N_("Thorough (1,500 people of each kind)")}


def copy_membership_section(state: StudioState, held: AttackResults) -> None:
    dataset = state.dataset
    st.write(
        _(
            "A die makes each person a **member**, a **non-member** or a **reference**. A synthetic copy is made from the "
            "members only, with the default plan's columns, and an attacker who holds the copy and the reference people "
            "tries to tell members from non-members: by how close each one's row is to a row of the copy, and by how much "
            "more the copy crowds around it than the reference people do. As a control, the same attacks run on the "
            "members' rows themselves — what a copy that memorised its rows would sell."
        )
    )
    left, right = st.columns(2)
    epsilon = left.select_slider(_("ε of the synthetic copy"), EPSILONS, value=1.0, key="attack_synthetic_epsilon")
    depth = right.radio(
        _("How hard to attack"),
        list(DEPTHS),
        format_func=lambda d: _(DEPTHS[d]),
        horizontal=True,
        key=keyed("attack_synthetic_depth"),
    )
    if st.button(_("Attack a synthetic copy"), type="primary", key="attack_synthetic_run"):

        def work(report: Callable[[float, float | None, str], None]) -> MembershipResult:
            return attack_copy(
                dataset.frame,
                dataset.schema,
                default_plan(dataset.schema),
                float(epsilon),
                max_people=PEOPLE[depth],
                progress=report,
            )

        held.copy_membership = _run(work, _("Making a synthetic copy of the members…")) or held.copy_membership
        _keep(state)
    result = held.copy_membership
    if result is None:
        st.caption(_("Press **Attack a synthetic copy** to start; the quick attack makes one small copy."))
        return
    show_membership(result, "attack_synthetic_log", hidden=("reference models", "empirical ε (lower bound)"))
