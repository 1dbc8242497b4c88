"""Train: fit a DP model on the table, spending part of the budget, and look inside it."""

import streamlit as st

from dpcore.exceptions import BudgetExceededError, DataError
from dpcore.i18n import _, short
from dpcore.models.choice import CHOICE_KEYS
from dpcore.models.registry import models_for
from dpcore.models.suggestion import suggested_model
from dpcore.training import TrainedModel
from dpstudio.support import roles
from dpstudio.support import trained_view as view
from dpstudio.support.data_view import release_refused
from dpstudio.support.declaring import leak_summary, leaky_columns
from dpstudio.support.language import keyed
from dpstudio.support.readable import task_name
from dpstudio.support.recipe_view import model_step, record_release
from dpstudio.support.session import get_state, recall_result, refuse_on_a_fresh_page, remember_result, said_refusal
from dpstudio.support.training import (
    budget_notice,
    delta_input,
    epsilon_input,
    progress_text,
    spent_heading,
    suggested_epsilon,
    train_in_session,
)

state = get_state()
dataset, schema, ledger = state.dataset, state.dataset.schema, state.ledger()
st.title(_("3. Train"))

# An analyst's session checks the declarations alone: a check against the rows could name what is in them.
problems = schema.problems(None if state.analyst else dataset.frame, need_target=True)
if state.analyst and (problems or leaky_columns(schema)):
    st.error(_("The owner's declarations are not complete yet, so no model can be trained: ask the owner."))
    st.stop()
if problems:
    st.error(
        _("The table's declarations are not complete yet:") + " " + " ".join(problems) + " " + _("Fix them on the Data page.")
    )
    st.stop()

budget_notice(ledger, suggested_epsilon(ledger), _("nothing more can be trained"))
st.write(
    _("Predict **{target}** ({task}) from {count} feature columns. Training spends budget.").format(
        target=schema.target.name, task=task_name(schema.task), count=len(schema.features)
    )
)
# After a reload the page shows the model trained last, so the selector starts on it too.
shown = recall_result(state, "trained", TrainedModel)
if leaky_columns(schema) and (shown is None or shown.task != schema.task):
    # With a model, the refusal stands where its downloads would be.
    release_refused(state, leaky_columns(schema), "train_")
elif leaky_columns(schema):
    st.warning(leak_summary(schema), icon=":material/warning:")
else:
    st.success(
        _("Every domain is declared: the model you get is differentially private and safe to share."),
        icon=":material/verified_user:",
    )
models = {m.key: m for m in models_for(schema.task, kinds=("ours",))}
suggested = None if state.analyst else models.get(state.best_model.get(schema.task))
if suggested:
    st.info(
        _(
            "Your last Compare run found **{model}** most accurate on this table. Picking a model by comparing on "
            "your own data reveals a little about it; the default below was chosen on public benchmark data instead."
        ).format(model=_(suggested.name)),
        icon=":material/lightbulb:",
    )
rows = roles.rows_to_show(state)  # an analyst's: the owner's published noisy count, never the table's
by_size = suggested_model(schema.task, rows, suggested_epsilon(ledger)) if rows is not None else None
if by_size is not None and by_size.key in models:
    reasons = {
        "boosting_everywhere": _(
            "on public tables of 300 to 10,000 rows, at ε from 0.3 to 3, it was the most accurate classifier at every size"
        ),
        "additive_large": _(
            "with ε × rows of 3,000 or more, it had the smaller error on public tables of that size (boosting leads below)"
        ),
        "boosting_small": _(
            "with ε × rows under 3,000, it had the smaller error on public tables of that size (the additive model leads above)"
        ),
    }
    st.caption(
        _("Suggested for this table's size ({rows} rows at ε = {epsilon}): **{model}** — {reason}.").format(
            rows=f"{rows:,}",
            epsilon=short(suggested_epsilon(ledger)),
            model=_(models[by_size.key].name),
            reason=reasons[by_size.reason],
        )
    )
choice_key = CHOICE_KEYS.get(schema.task)
picks = [key for key in models if key != choice_key]
let_dp_choose = choice_key in models and st.toggle(
    _("Let DP choose the model"), value=shown is not None and shown.key == choice_key, key="train_choice"
)
if let_dp_choose:
    spec = models[choice_key]
else:
    start = picks.index(shown.key) if shown is not None and shown.key in picks else 0
    spec = models[st.selectbox(_("Model"), picks, index=start, format_func=lambda k: _(models[k].name), key=keyed("train_model"))]
st.caption(_(spec.description))
view.approximate_warning(spec)
params = view.settings(spec)
encodings = {"ordinal": _("one column each (codes)"), "onehot": _("one 0/1 column per category")}
encoding = st.radio(
    _("Categorical features"),
    list(encodings),
    horizontal=True,
    format_func=encodings.get,
    key=keyed("train_encoding"),
    help=_("Codes keep the table narrow, which suits DP trees; one-hot suits Naive Bayes with few categories."),
)

epsilon = epsilon_input(ledger, _("ε to spend on this model"), "train_epsilon", _("trained"))
delta = delta_input(ledger, spec, epsilon)
seeded = not state.analyst and st.checkbox(_("Reproducible demo seed (the result must not be released)"), value=False)

if st.button(_("Train"), type="primary", disabled=epsilon is None or (spec.approximate and delta is None)):
    bar = st.progress(0.0, text=_("Training {model} at ε = {epsilon}…").format(model=_(spec.name), epsilon=short(epsilon)))
    try:
        state.trained = train_in_session(
            state,
            spec.key,
            epsilon,
            params,
            encoding,
            seeded,
            progress=lambda elapsed, left: bar.progress(*progress_text(_(spec.name), elapsed, left)),
            delta=delta,
        )
        remember_result(state, "trained")  # even if this browser tab was reloaded meanwhile, the charged model is kept
        record_release(state, model_step(state.trained))
        st.rerun()
    except (BudgetExceededError, DataError) as error:
        refuse_on_a_fresh_page(state, "train", roles.refusal(state, error))
    except Exception:
        bar.empty()
        st.error(
            _(
                "This model could not be trained on this table; nothing was charged. Check the declarations on the Data "
                "page or pick another model."
            )
        )
said_refusal(state, "train")

trained = recall_result(state, "trained", TrainedModel)  # also one a run cut short by a reload finished
if trained is None or trained.task != schema.task:
    st.stop()

st.divider()
st.subheader(spent_heading(_(trained.name), trained.epsilon, ledger, trained.delta))
view.spending(trained)
view.chosen(trained)
if trained.read_from_data:
    st.error(
        _("Not differentially private: trained with domains read from the data. Do not share this model."),
        icon=":material/gpp_bad:",
    )
if trained.seeded:
    st.warning(_("Reproducible seed — do not release this model."), icon=":material/warning:")
if state.analyst:  # scores measured on the rows, and counts drawn from them, are the owner's only
    st.caption(_("The model's scores on the table's rows are for the dataset's owner only; download the model to use it."))
else:
    view.scores(trained, schema)
    view.inside(trained, schema)
view.card_and_downloads(state, trained, ledger.unit)
