"""A trained model's card: what it is, what it cost in the dataset's unit, its declared domain and privacy argument.

The card holds nothing measured on the rows: the ε and δ spent, the parameters, the public
declarations and the estimator's own privacy summary. Held-out scores are left out on purpose
(they are computed on raw data and are for the owner's eyes only). A card leaves the owner's
screen, so a model fitted on a domain read from the data gets none
(:func:`~dpcore.tables.schema.check_releasable`), and the privacy line is written from what the model
spent and what its columns declare, never a fixed phrase.
"""

from __future__ import annotations

from decimal import Decimal

from dpcore.budget.accountant import ADD_REMOVE, UNITS, convert
from dpcore.budget.persons import per_row
from dpcore.exceptions import DataError
from dpcore.i18n import N_, _, get_language, short
from dpcore.models.registry import get, privacy_argument
from dpcore.tables.schema import Schema, check_releasable
from dpcore.training import TrainedModel
from dpcore.validation import epsilon_decimal

SEEDED_WARNING = N_("Reproducible demo seed — do not release this model.")


def privacy_line(trained: TrainedModel, schema: Schema, unit: str = ADD_REMOVE) -> str:
    """The model's guarantee: what it spent, what that costs in the dataset's unit, and where its domain came from."""
    delta, k = trained.delta, trained.rows_per_person
    who = _("one person's rows added or removed") if k > 1 else _("add/remove-one neighbours")
    if delta:
        line = _(
            "- **Privacy**: (ε = {epsilon}, δ = {delta})-differential privacy — APPROXIMATE DP, not pure ε-DP "
            "(how the noise is accounted for: see the privacy argument below); {who}."
        ).format(epsilon=short(trained.epsilon), delta=short(delta), who=who)
    else:
        line = _("- **Privacy**: ε = {epsilon} (pure ε-differential privacy, {who}).").format(
            epsilon=short(trained.epsilon), who=who
        )
    if k > 1:
        line += " " + _(
            "Per person, counting up to {k} rows each: at most {k} rows of a person were used (a random subset), "
            "and the model was fitted at ε = {row_epsilon} per row, which by group privacy is "
            "ε = {epsilon} per person."
        ).format(k=k, row_epsilon=short(float(f"{per_row(trained.epsilon, 0.0, k)[0]:.4g}")), epsilon=short(trained.epsilon))
    eps, dlt = convert(epsilon_decimal(trained.epsilon), Decimal(repr(delta)), ADD_REMOVE, unit)
    cost = f"ε = {short(float(eps))}" + (f", δ = {short(float(dlt))}" if dlt else "")
    line += " " + _("In the dataset's unit ({unit}) it counts as {cost}.").format(unit=_(UNITS[unit]), cost=cost)
    line += " " + schema.domain_words(_model_columns(schema))
    return line + (" " + _(SEEDED_WARNING) if trained.seeded else "")


def _model_columns(schema: Schema) -> list[str]:
    return [c.name for c in schema.features] + ([schema.target.name] if schema.target is not None else [])


def model_card(trained: TrainedModel, schema: Schema, unit: str = ADD_REMOVE) -> str:
    """A short Markdown card for ``trained``, fitted with ``schema``'s declarations in a dataset of ``unit``.

    Raises
    ------
    DataError
        If the model was fitted on a domain read from the data, or ``schema`` now holds one for
        its columns (the card would print it): :func:`~dpcore.tables.schema.release_refusal`.
    """
    check_releasable(list(dict.fromkeys([*trained.read_from_data, *schema.read_from_data()])))
    target = schema.target
    if target is None:  # was an AttributeError on None
        raise DataError(_("The schema declares no target column, so it cannot describe a trained model."))
    doc = (type(trained.model).__doc__ or "").strip()
    # The estimator's docstring is English; another language shows the registry's (translated) description.
    headline = doc.splitlines()[0] if doc and get_language() == "en" else _(get(trained.key).description)
    settings = ", ".join(f"{k} = {v}" for k, v in trained.parameters.items()) or _("defaults")
    spending = trained.details.get("spending")  # the public settings a model chose (DP-SGD's passes, steps, noise)
    lines = [
        _("# Model card: {name}").format(name=_(trained.name)),
        "",
        f"*{headline}*",
        "",
        privacy_line(trained, schema, unit),
        _("- **Task**: {task}; target `{target}`.").format(task=_(trained.task), target=target.name),
        _("- **Parameters**: {settings}.").format(settings=settings),
        *([f"- {spending}"] if spending else []),  # already a translated sentence
        _("- **Count noise / selection**: {noise} / {selection}.").format(
            noise=getattr(trained.model, "count_noise", "n/a"), selection=getattr(trained.model, "selection", "n/a")
        ),
        *(
            [_("- **Learner chosen by DP**: {model}.").format(model=_(get(trained.details["chosen"]).name))]
            if "chosen" in trained.details
            else []
        ),
        "",
        _("## Declared bounds (public)"),
        "",
    ]
    for c in [*schema.features, target]:
        domain = f"[{c.lower:g}, {c.upper:g}]" if c.kind == "numeric" else "{" + ", ".join(c.categories) + "}"
        lines.append(f"- `{c.name}` ({c.kind}): {domain}" + (f" — {c.source}" if c.source else ""))
    lines += ["", _("## Privacy argument"), "", privacy_argument(trained.key), ""]
    if trained.seeded:
        lines.append(f"> **{_(SEEDED_WARNING)}**")
    return "\n".join(lines) + "\n"
