"""Groups: where are the dense groups in my table? A private map of them (the thesis's DP-DBSCAN, made rigorous)."""

import streamlit as st

from dpcore.clustering import clustering_columns
from dpcore.exceptions import BudgetExceededError, DataError
from dpcore.i18n import _, short
from dpstudio.support import groups_view as view
from dpstudio.support.data_view import release_refused
from dpstudio.support.roles import owner_only
from dpstudio.support.session import get_state, refuse_on_a_fresh_page, said_refusal
from dpstudio.support.training import budget_notice, epsilon_input, suggested_epsilon

state = get_state()
st.title(_("6. Groups"))
owner_only(state)
dataset, schema, ledger = state.dataset, state.dataset.schema, state.ledger()
st.write(
    _(
        "Where are the dense groups in your table — customers by location and income, patients by age and dose? A grid is "
        "laid over the columns' declared bounds, **every** cell's count gets noise, and dense cells that touch form a group. "
        "What you can share is the **map** of groups; which group each of your rows falls in is for your eyes only."
    )
)

budget_notice(ledger, suggested_epsilon(ledger), _("no map can be made"))
candidates = clustering_columns(schema)
if len(candidates) < 2:
    st.error(_("Finding groups needs at least two numeric columns with declared bounds. Declare their bounds on the Data page."))
    st.stop()
columns = view.choose_columns(candidates, dataset.fingerprint)
if columns is None:
    st.stop()
grid = view.grid_settings(schema, columns)
result = view.current(state)
if schema.read_from_data(columns) and result is None:  # with a map, the refusal stands where its downloads would be
    release_refused(state, schema.read_from_data(columns), "groups_")

epsilon = epsilon_input(ledger, _("ε to spend on the map"), "groups_epsilon", _("computed"))
seeded = st.checkbox(_("Reproducible demo seed (the map must not be released)"), value=False, key="groups_seeded")

if st.button(_("Find groups"), type="primary", disabled=epsilon is None or grid is None):
    with st.spinner(_("Finding groups at ε = {epsilon}…").format(epsilon=short(epsilon))):
        try:
            view.find_in_session(state, columns, epsilon, grid, seeded)
            st.rerun()
        except (BudgetExceededError, DataError) as error:
            refuse_on_a_fresh_page(state, "groups", str(error))
        except Exception:
            st.error(
                _(
                    "The groups could not be found on these columns; nothing was charged. Check the declarations on the "
                    "Data page or choose other columns."
                )
            )
said_refusal(state, "groups")

result = view.current(state)  # the map just found, if any
if result is None:
    st.stop()

st.divider()
found = result.found
view.header(found, ledger)
if not found.n_clusters:  # a map of noise is not drawn as if it were groups
    view.no_groups(found)
    view.downloads(state, found, ledger.unit)
    st.stop()
x, y = view.group_map(found)
view.downloads(state, found, ledger.unit)
st.divider()
view.owner_rows(found, dataset.frame, schema, x, y)
view.comparison(result, dataset.frame, schema)
