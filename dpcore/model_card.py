"""A trained model's card: what it is, what it cost in the dataset's unit, its declared domain and privacy argument.

The card holds nothing measured on the rows: the ε and δ spent, the parameters, the public
declarations and the estimator's own privacy summary. Held-out scores are left out on purpose
(they are computed on raw data and are for the owner's eyes only).
"""

from __future__ import annotations

from decimal import Decimal

from dpcore.accountant import ADD_REMOVE, UNITS, convert, fmt
from dpcore.exceptions import DataError
from dpcore.models.registry import get, privacy_summary
from dpcore.persons import per_row
from dpcore.schema import Schema
from dpcore.training import TrainedModel
from dpcore.validation import epsilon_decimal

SEEDED_WARNING = "Reproducible demo seed — do not release this model."


def privacy_line(trained: TrainedModel, unit: str = ADD_REMOVE) -> str:
    """The model's guarantee, and what it costs in the dataset's unit of protection."""
    delta, k = trained.delta, trained.rows_per_person
    who = "one person's rows added or removed" if k > 1 else "add/remove-one neighbours"
    if delta:
        line = (f"- **Privacy**: (ε = {trained.epsilon:g}, δ = {delta:g})-differential privacy — APPROXIMATE DP (Gaussian "
                f"noise, zCDP accounting), not pure ε-DP; {who}.")
    else:
        line = f"- **Privacy**: ε = {trained.epsilon:g} (pure ε-differential privacy, {who})."
    if k > 1:
        line += (f" Per person, counting up to {k} rows each: at most {k} rows of a person were used (a random subset), "
                 f"and the model was fitted at ε = {per_row(trained.epsilon, 0.0, k)[0]:.4g} per row, which by group privacy is "
                 f"ε = {trained.epsilon:g} per person.")
    eps, dlt = convert(epsilon_decimal(trained.epsilon), Decimal(repr(delta)), ADD_REMOVE, unit)
    return line + (f" In the dataset's unit ({UNITS[unit]}) it counts as ε = {fmt(eps)}"
                   + (f", δ = {fmt(dlt)}" if dlt else "") + ".")


def model_card(trained: TrainedModel, schema: Schema, unit: str = ADD_REMOVE) -> str:
    """A short Markdown card for ``trained``, fitted with ``schema``'s declarations in a dataset of ``unit``."""
    target = schema.target
    if target is None:  # was an AttributeError on None
        raise DataError("The schema declares no target column, so it cannot describe a trained model.")
    doc = (type(trained.model).__doc__ or "").strip()
    headline = doc.splitlines()[0] if doc else get(trained.key).description
    settings = ", ".join(f"{k} = {v}" for k, v in trained.parameters.items()) or "defaults"
    lines = [
        f"# Model card: {trained.name}",
        "",
        f"*{headline}*",
        "",
        privacy_line(trained, unit),
        f"- **Task**: {trained.task}; target `{target.name}`.",
        f"- **Parameters**: {settings}.",
        f"- **Count noise / selection**: {getattr(trained.model, 'count_noise', 'n/a')} / "
        f"{getattr(trained.model, 'selection', 'n/a')}.",
        "",
        "## Declared bounds (public)",
        "",
    ]
    for c in [*schema.features, target]:
        domain = f"[{c.lower:g}, {c.upper:g}]" if c.kind == "numeric" else "{" + ", ".join(c.categories) + "}"
        lines.append(f"- `{c.name}` ({c.kind}): {domain}" + (f" — {c.source}" if c.source else ""))
    lines += ["", "## Privacy argument", "", privacy_summary(trained.key), ""]
    lines += [f"> **Warning:** {note}" for note in schema.leak_notes()]
    if trained.seeded:
        lines.append(f"> **{SEEDED_WARNING}**")
    return "\n".join(lines) + "\n"
