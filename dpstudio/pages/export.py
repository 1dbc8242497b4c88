"""Export: a randomized-response copy or a synthetic copy of the table for offline sale, with the buyer's privacy report."""

import streamlit as st

from dpcore.exceptions import BudgetExceededError, DataError
from dpcore.i18n import _
from dpcore.release import ReleasePlan, ReleaseResult, describe_plan, kept_rows, preview_release, release_table
from dpcore.synthetic import SyntheticResult
from dpstudio.support import analyst_view
from dpstudio.support import export_view as view
from dpstudio.support import synthetic_view as synthetic
from dpstudio.support.data_view import ways_out
from dpstudio.support.declaring import leak_summary, leaky_columns
from dpstudio.support.recipe_view import randomized_step, record_release
from dpstudio.support.session import get_state, refuse_on_a_fresh_page, remember_release, said_refusal

state = get_state()
dataset, schema, ledger = state.dataset, state.dataset.schema, state.ledger()
st.title(_("5. Export"))
if state.analyst:
    analyst_view.export_page(state)
    st.stop()
st.write(
    _(
        "Sell a copy of the table, of one of two kinds. In a **randomized copy** every person can plausibly deny every value: "
        "each sensitive cell is randomized on its own, and the buyer's privacy report lets them undo the noise *on average*. "
        "In a **synthetic copy** no row is a real person's: rows are invented from a model of the table's noisy counts, which "
        "keeps the relations between columns far better at the same ε. Compare the two below before spending anything."
    )
)
kind = synthetic.choose_kind()
if kind == synthetic.RANDOMIZED:
    view.unit_notice(ledger, schema)
else:
    synthetic.budget_notice(ledger)
column_problems = [p for c in schema.columns for p in c.problems()]
if column_problems:
    st.error(_("Some declarations are incomplete:") + " " + " ".join(column_problems) + " " + _("Fix them on the Data page."))
    st.stop()

if leaky_columns(schema):
    st.warning(leak_summary(schema), icon=":material/warning:")
    ways_out(state, leaky_columns(schema), "export_")

st.subheader(_("The plan"))
st.caption(
    _(
        "Per column: drop it, keep it (only for columns you declared public), the coin (yes/no columns, ε = ln 3), k-ary "
        "randomized response for categories, bins + k-ary or Laplace noise for numbers. Identifiers are dropped by default."
    )
)
base_plan, sentence = view.starting_plan(state, ledger, synthetic=kind == synthetic.SYNTHETIC)
if base_plan is None:
    st.error(sentence)
    st.stop()
if sentence:
    st.info(sentence, icon=":material/sync:")
try:
    plan = ReleasePlan.from_frame(view.plan_editor(base_plan, dataset))
except DataError as error:
    st.error(str(error))
    st.stop()
if kind == synthetic.SYNTHETIC:
    problems = plan.problems(schema)
    if problems:
        st.error(" ".join(problems))
        st.stop()
    chosen = synthetic.settings(ledger, schema=schema, plan=plan)
    if chosen is not None:
        synthetic.preview(state, plan, chosen)
        st.subheader(_("The synthetic copy"))
        synthetic.make_copy(state, ledger, plan, chosen)
    elif isinstance(state.release, SyntheticResult):
        synthetic.made(state.release)
        synthetic.beside_the_table(state)
    st.stop()

described = describe_plan(plan, schema)
st.dataframe(
    described,
    hide_index=True,
    width="stretch",
    column_config={name: st.column_config.Column(_(name)) for name in described.columns},
)
view.cost_metrics(plan, ledger, schema)
problems = [*plan.problems(schema), *filter(None, [view.budget_problem(state, ledger, plan)])]
if problems:
    st.error(" ".join(problems))
    st.stop()

counted = kept_rows(dataset.frame, schema)
noisy = view.worth_buying(plan, schema, counted)
st.subheader(_("Preview — owner only"))
st.caption(
    _(
        "The first rows as a buyer would see them, with fresh noise; this preview is not the released copy and never leaves "
        "this screen."
    )
)
st.dataframe(preview_release(dataset.frame, schema, plan, 8), hide_index=True, width="stretch")

fresh = st.checkbox(_("Make a fresh copy (a new release, charged to the budget again)"), value=False)
confirmed = not noisy or view.noise_confirmation()
if st.button(_("Release the copy"), type="primary", disabled=not confirmed):
    try:
        with st.spinner(_("Randomizing every cell…")):
            state.release = release_table(
                dataset.frame, schema, plan, ledger=ledger, fresh=fresh, label="Export: randomized copy"
            )
        state.released_plans[view.plan_key(dataset, ledger)] = plan
        if not state.release.reused:  # a copy handed out again is no new release
            record_release(state, randomized_step(plan, dataset))
        remember_release(state)
        st.rerun()
    except (BudgetExceededError, DataError) as error:
        refuse_on_a_fresh_page(state, "release", str(error))
    except Exception:
        st.error(_("The copy could not be made from this table; nothing was charged. Check the plan and the declarations."))
said_refusal(state, "release")

if isinstance(state.release, ReleaseResult):
    view.released(state.release)
    view.buyer_check(dataset.frame, schema, plan, state.release, counted)
