"""The privacy argument of DP boosting, in full for the estimators' docstrings and in short for model cards."""

from __future__ import annotations

from dpcore.i18n import N_
from dpcore.models._base import NEIGHBOURS

PRIVACY = r"""
    Privacy argument (pure ε-DP, add/remove-one neighbours).

    * **Paid preliminaries** (before the rounds, each a stated share of ε):
      a noisy row count (Laplace, sensitivity 1, ``size_share·ε``; only when ``n_rounds`` or
      ``max_depth`` is ``"auto"``), which sets them and the first-level share through
      :func:`~dpcore.models._boosting.structures.default_sizes` and ``pick_share``; and
      DP quantiles (:class:`~dpcore.mechanisms.quantiles.Quantiles`, ``quantile_share·ε``, half of
      it for the target in regression) of every numeric feature — which narrow the range the
      thresholds are drawn from — and of the regression target — whose DP median is the
      starting score and whose DP spread sets ``clip="auto"``. What they read from the data is
      exactly these released values; everything built from them is post-processing.
    * **Structure.** Every round's tree (features, thresholds, category subsets, one branch per
      category) is drawn from a generator that never sees the data, between the released
      quantile knots; with ``feature_weighting > 0`` the features' probabilities follow how far
      earlier rounds' *released* noisy steps moved between a feature's branches (weighted by
      their noisy counts: paid mechanism outputs, kept inside the fit) — post-processing of
      noisy values, at no cost. The fit keeps no generator: a saved model cannot replay its noise.
    * **First-level picks** (``select_share``; by default with two classes and for regression on small tables, pure ε).
      Before round ``r``'s tree is drawn, one split per feature is drawn as above, and the
      exponential mechanism (permute-and-flip, McKenna & Sheldon 2020) picks one as the tree's
      first level at ``ε_pick = select_share · ε_round``. A candidate's utility is
      ``Σ_b ‖S_b‖₁``, the L1 norms of its branches' clipped residual sums, taken as exact
      integers on the fixed-point grid below: one record adds its rounded residual vector to
      exactly one branch of every candidate, so by the triangle inequality every utility moves
      by at most ``⌈2^14 · Δ₁ / clip⌉`` (``Δ₁`` the residual's L1 bound below) — the mechanism's
      sensitivity, so the pick is ε_pick-DP. The candidates are data-independent; only the
      index of the pick is released, and the rest of the tree is drawn as above.
    * **Bounded contribution.** A record's residual (``y − F(x)``; ``y − sigmoid(F)``; the
      softmax residual vector) is clipped to ``[−clip, clip]`` per component, so it moves one
      leaf's residual sum by at most ``clip`` (regression, binary) or by
      ``min(2, clip + min(1, (K−1)·clip))`` in L1 (multiclass: with a one-hot ``y`` the true
      class's entry ``1 − p_y`` is ≥ 0 and clipped to at most ``clip``; the others are ``−p_j``,
      each clipped to at most ``clip`` and together at most ``1 − p_y ≤ 1`` in size).
    * **Per-round budget.** Round ``r`` spends ``ε_round``: ``ε_pick`` on its first level (when
      picked), of the rest a share ``count_share`` on the leaves' noisy counts (sensitivity 1)
      and the remainder on their noisy residual sums (Laplace). The leaves of one round are
      disjoint (parallel composition).
    * **Fixed point.** The sums are exact integer sums: each clipped residual, divided by
      ``clip``, is rounded *toward zero* to the public grid of ``2^-14`` — a per-record map that
      never enlarges a component, so every bound above (per component, L1, L2) holds for the
      rounded residuals — and the same on every backend, in any order of the rows.
    * **Sequential rounds.** Residuals of round ``r`` (for its pick and its leaves) depend on the
      record itself and on earlier rounds' *released* noisy leaves only, so the rounds compose adaptively with the
      preliminaries: ``(size_share + quantile_share)·ε + n_rounds · ε_round = ε``, with
      ``ε_round = (1 − size_share − quantile_share)·ε / n_rounds``. Leaf steps (noisy sum over the noisy count, or over the public floor
      ``min_leaf_count + count_floor ×`` the count noise's scale when the count is below it)
      and predictions are post-processing.

    Approximate-DP mode (``delta > 0``, clearly not pure ε-DP): the same queries get Gaussian
    noise. ``(ε, δ)`` is turned into a zCDP budget ``ρ = (√(ln(1/δ) + ε) − √ln(1/δ))²``; the
    quantiles take ``quantile_share·ρ`` (a pure ``ε_q``-DP step is ``ε_q²/2``-zCDP), the rest is spread
    evenly over the rounds (ρ's add up under composition; no noisy row count: the mode keeps
    its ε-only sizes and picks no first level unless ``select_share`` asks, when a pick of
    ``ρ_pick`` is the exponential mechanism at ``ε = √(8ρ_pick)``, sampled exactly
    (:func:`~dpcore.mechanisms.exponential.exact_choice`): ε-bounded range, hence ``ε²/8``-zCDP, Cesar & Rogers 2021); each query's noise is
    ``σ = Δ₂/√(2ρ_query)`` with the L2 sensitivities 1 (counts), ``clip`` (regression, binary) and
    ``min(√2, √K·clip)`` (multiclass), and ρ-zCDP implies (ε, δ)-DP (Bun & Steinke 2016).

    Defaults (``n_rounds``, ``max_depth``, ``learning_rate``, ``clip``, ``count_share``,
    ``quantile_share``, ``size_share``) were fixed once on public benchmark data — California
    Housing (StatLib, declared bounds, and the same with every range widened tenfold), UCI Adult,
    Nursery, Mushroom and Congressional Voting — and are never tuned on the owner's table
    (tuning on it would itself leak). Their sizes follow a *noisy* row count, never the exact one.
"""

#: The argument after :data:`NEIGHBOURS`, with ``{residuals}`` named per task (``privacy_template``, for the catalog).
PRIVACY_ARGUMENT = N_(
    "A stated share of ε buys a noisy row count (which sets the number of rounds and the depth) and DP quantiles (which "
    "place the split thresholds where the data are and, for regression, the start and clip). "
    "The rounds share the rest equally: a round draws its tree without looking at the records, except that (by default "
    "under pure ε, with two classes and for regression on small tables) a stated part of its share picks the first split "
    "by the exponential mechanism among one random split per column (the one whose branches' {residuals} pull apart most is the likeliest; the regressor's later trees also "
    "favour features whose noisy steps moved most in earlier rounds), and spends the rest on noisy leaf counts and noisy "
    "sums of {residuals} clipped to [−clip, clip]; the leaves of a round hold disjoint records (parallel composition) and "
    "the rounds compose sequentially, so the model is ε-DP. With "
    "delta > 0 the counts and sums get Gaussian noise under zCDP accounting instead, and the model is (ε, δ)-DP."
)
PRIVACY_SUMMARY = NEIGHBOURS + PRIVACY_ARGUMENT
