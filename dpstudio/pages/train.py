"""Train: fit a DP model on the table, spending part of the budget, and look inside it."""

import streamlit as st

from dpcore.exceptions import BudgetExceededError, DataError
from dpcore.explain import epsilon_problem
from dpcore.models.registry import models_for
from dpstudio.support.declaring import leak_summary, leaky_columns
from dpstudio.support.session import get_state, recall_model, remember_model
from dpstudio.support.training import format_metric, model_bytes, model_card, rounds_table, train_model, tree_dot

state = get_state()
recall_model(state)
dataset = state.dataset
schema = dataset.schema
ledger = state.ledger()
st.title("3. Train")

problems = schema.problems(dataset.frame, need_target=True)
if problems:
    st.error("The table's declarations are not complete yet: " + " ".join(problems) + " Fix them on the Data page.")
    st.stop()

task = schema.task
st.write(f"Predict **{schema.target.name}** ({task}) from {len(schema.features)} feature columns. Training spends budget.")
if leaky_columns(schema):
    st.error(
        leak_summary(schema) + " The model below will NOT be safe to share until their domains are declared on the Data page.",
        icon=":material/gpp_bad:",
    )
else:
    st.success("Every domain is declared: the model you get is differentially private and safe to share.",
               icon=":material/verified_user:")
models = models_for(task, kinds=("ours",))
names = {m.key: m.name for m in models}
suggested = state.best_model.get(task)
if suggested in names:
    st.info(
        f"Your last Compare run found **{names[suggested]}** most accurate on this table. Picking a model by comparing on "
        "your own data reveals a little about it; the default below was chosen on public benchmark data instead.",
        icon=":material/lightbulb:",
    )
key = st.selectbox("Model", list(names), index=0, format_func=names.get)
spec = next(m for m in models if m.key == key)
st.caption(spec.description)
if "approximate" in spec.name:
    st.warning(
        "Approximate DP: this model promises ε only up to a small probability δ = 1e-5 of failure. Choose it only if "
        "you accept that; every other model is pure ε-DP.",
        icon=":material/warning:",
    )

params = {}
if spec.parameters:
    with st.expander("Model settings", expanded=False):
        for p in spec.parameters:
            if p.choices:
                params[p.name] = st.selectbox(p.name, p.choices, index=p.choices.index(p.default), help=p.help, key=f"{key}_{p.name}")
            else:
                params[p.name] = st.number_input(
                    p.name, min_value=int(p.minimum), max_value=int(p.maximum), value=int(p.default), step=1, help=p.help,
                    key=f"{key}_{p.name}",
                )
encoding = st.radio(
    "Categorical features", ["ordinal", "onehot"], horizontal=True,
    format_func=lambda e: {"ordinal": "one column each (codes)", "onehot": "one 0/1 column per category"}[e],
    help="Codes keep the table narrow, which suits DP trees; one-hot suits Naive Bayes with few categories.",
)

remaining = ledger.remaining
# A model is ε-DP for adding or removing a row; the ledger says what that costs in the dataset's unit.
factor = ledger.cost(1.0)
available = ledger.available()
st.write(f"Budget left for this dataset: **ε = {remaining:g}** of {ledger.total:g}."
         + (f" A model counts double in this dataset's unit, so at most ε = {available:g} can go to a model." if factor > 1 else ""))
epsilon, problem = None, None
if available < 0.001:
    st.error("The budget is spent: nothing more can be trained on this dataset. Raise the total on the Privacy page only if "
             "you accept a weaker promise.")
else:
    typed = st.text_input("ε to spend on this model", value=f"{min(available, max(ledger.total / 4 / factor, 0.001)):g}",
                          key="train_epsilon")
    epsilon, problem = epsilon_problem(typed, available)
    if problem:
        st.error(problem + " Nothing will be trained or charged until it is fixed.")
seeded = st.checkbox("Reproducible demo seed (the result must not be released)", value=False)

if st.button("Train", type="primary", disabled=epsilon is None):
    try:
        bar = st.progress(0.0, text=f"Training {spec.name} at ε = {epsilon:g}…")

        def show(elapsed: float, estimate: float) -> None:
            if estimate == estimate and estimate > 0:
                left = max(estimate - elapsed, 0.0)
                bar.progress(min(elapsed / estimate, 0.99), text=f"Training {spec.name}: {elapsed:.0f} s, about {left:.0f} s left")
            else:
                bar.progress(0.5, text=f"Training {spec.name}: {elapsed:.0f} s")

        state.trained = train_model(
            dataset, key, epsilon, ledger, params, encoding, state.count_noise, state.selection, seeded, progress=show
        )
        bar.empty()
        remember_model(state)  # even if this browser tab was reloaded meanwhile, the charged model is kept
        st.rerun()
    except BudgetExceededError as error:
        st.error(str(error))
    except DataError as error:
        st.error(str(error))
    except Exception:
        st.error("This model could not be trained on this table; nothing was charged. Check the declarations on the Data page or pick another model.")

trained = state.trained
if trained is None or trained.task != task:
    st.stop()

st.divider()
counted = ledger.cost(trained.epsilon)
st.subheader(f"{trained.name} — ε = {trained.epsilon:g} spent" + (f" (counts as {counted:g} in this dataset's unit)" if counted != trained.epsilon else ""))
if leaky_columns(schema):
    st.error("Not differentially private: trained with domains read from the data. Do not share this model.",
             icon=":material/gpp_bad:")
if trained.seeded:
    st.warning("Reproducible seed — do not release this model.", icon=":material/warning:")
st.caption(
    f"Measured on your raw data — for your eyes, not for release: trained on {trained.details['n_train']:,} rows, "
    f"tested on the other {trained.details['n_test']:,}."
)
unit = schema.target.name if trained.task == "regression" else ""
baseline = trained.details.get("baseline", {})
cols = st.columns(len(trained.metrics))
for col, (metric, value) in zip(cols, trained.metrics.items()):
    shown = format_metric(value, trained.task) + (f" {unit}" if unit else "")
    reference = baseline.get(metric)
    col.metric(metric, shown,
               help=None if reference is None else f"{trained.details['baseline_name']}: {format_metric(reference, trained.task)}")
if trained.details.get("n_without_target"):
    st.caption(f"{trained.details['n_without_target']:,} rows had no usable value of '{schema.target.name}' (missing or "
               "not a declared category) and were left out (owner only).")
if baseline:
    pairs = ", ".join(f"{m} {format_metric(v, trained.task)}" for m, v in baseline.items())
    first = next(iter(trained.metrics))
    worse = (trained.metrics[first] > baseline[first]) if trained.task == "regression" else (trained.metrics[first] < baseline[first])
    text = f"For comparison, {trained.details['baseline_name']} gives {pairs} (owner only)."
    if worse:
        st.warning(text + " This model does no better at this ε: spend more ε, use fewer features, or declare tighter "
                   "bounds.", icon=":material/trending_down:")
    else:
        st.caption(text)
if "confusion" in trained.details:
    left, right = st.columns(2)
    left.write("Confusion matrix (held-out rows)")
    left.dataframe(trained.details["confusion"], width="stretch")
    right.write("Per class")
    right.dataframe(trained.details["per_class"], hide_index=True, width="stretch")

if "tree" in trained.details:
    st.subheader("Inside the model")
    st.caption("Every count shown is noisy (n ≈ …): the tree itself is part of the private release.")
    depth = st.slider("Levels to draw", 1, 8, 3)
    st.graphviz_chart(tree_dot(trained.details["tree"], schema, depth, unit), width="stretch")

if "rounds" in trained.details:
    st.subheader("Inside the model")
    st.caption(
        "Each round is a small random tree drawn without looking at your data; only its leaf steps are learned, with noise. "
        "The first rounds:"
    )
    st.dataframe(rounds_table(trained.details["rounds"], schema), hide_index=True, width="stretch")

card = model_card(trained, dataset, ledger.unit)
with st.expander("Model card"):
    st.markdown(card)
left, right = st.columns(2)
left.download_button("Download the model card (Markdown)", card, file_name="model_card.md", mime="text/markdown")
if trained.seeded:
    right.button("Download the model (disabled: demo seed)", disabled=True)
else:
    right.download_button("Download the fitted model (pickle)", model_bytes(trained), file_name="dp_model.pkl", mime="application/octet-stream")
