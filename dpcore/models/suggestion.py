"""Which of our models a table's size suggests, from measurements on public tables.

What decides between our learners is mostly the signal a budget leaves: ε times the number of
rows (twice the rows at half the ε give about the same noise per statistic). The rule below
was read off ``benchmarks/model_by_size.py`` (``benchmarks/README.md`` §26): random subsets of
300–10,000 rows of Adult and California housing at ε = 0.3, 1 and 3, three draws each,
registry defaults.

* **Classification**: boosting had the best median accuracy at every size and ε but the
  smallest (ε·rows = 90, a tie with the additive model), by 0.3–4 points over the additive
  model and naive Bayes.
* **Regression**: from ε·rows = 3,000 the additive model had the lower or equal error in five
  of six cells on California (normalised MSE up to 0.004 lower, a seventh; boosting led by
  0.002 at 30,000), and it led on Abalone (§25); below 3,000, boosting won by up to 0.012.

The suggestion reads the table's exact row count on the owner's screen, like the other advice
the pages give the owner; it spends nothing, and the owner's pick is theirs. A model trained
afterwards is differentially private whichever learner was picked; only the pick itself
depends on whether the table has more rows than the threshold.
"""

from __future__ import annotations

from dataclasses import dataclass

#: ε·rows from which the additive model is suggested for a numeric target (§26).
ADDITIVE_REGRESSION_FROM = 3_000.0


@dataclass(frozen=True)
class Suggestion:
    """A registry key and the measured reason for it (the page words the reason)."""

    key: str
    signal: float
    reason: str


def suggested_model(task: str, rows: int, epsilon: float) -> Suggestion | None:
    """The model suggested for ``rows`` rows at ``epsilon``, or None for a task without one.

    ``reason`` is ``"boosting_everywhere"``, ``"additive_large"`` or ``"boosting_small"``.
    """
    signal = max(float(rows), 0.0) * max(float(epsilon), 0.0)
    if task == "classification":
        return Suggestion("dp_boosting_clf", signal, "boosting_everywhere")
    if task == "regression":
        if signal >= ADDITIVE_REGRESSION_FROM:
            return Suggestion("dp_additive_reg", signal, "additive_large")
        return Suggestion("dp_boosting_reg", signal, "boosting_small")
    return None
