"""(ε, δ)-DP stochastic gradient descent (spec §10.1, the thesis's Algorithm 8 made rigorous).

Linear regression (squared loss on the target scaled to [0, 1]), logistic / softmax regression,
and optionally one hidden layer of ``tanh`` units. Every step: a Poisson-subsampled batch, each
record's gradient in closed form (all records at once, no loop over records), clipped to L2
norm ``clip``, summed, exact discrete Gaussian noise added. The noise is calibrated by a
subsampled Rényi bound that holds for the noise actually drawn
(:mod:`dpcore.models._dpsgd_accounting`, :mod:`dpcore.models._subsampled_rdp`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Self

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.special import expit, softmax
from sklearn.base import ClassifierMixin, RegressorMixin

from dpcore.i18n import N_, _
from dpcore.mechanisms import Gaussian
from dpcore.models._base import NEIGHBOURS, DeclaredClassesMixin, DPEstimatorMixin, TargetScalingMixin
from dpcore.models._dpsgd_accounting import (
    ACCOUNTANTS,
    EPOCH_CHOICES,
    choose_schedule,
    count_noise_for,
    poisson_batches,
    steps_for,
)
from dpcore.validation import Bounds, RandomStateLike, check_delta, check_positive_int

#: A public cap on the number of steps (the fit's time); past it the sampling rate is raised instead.
MAX_STEPS = 4000

_PRIVACY = r"""
    Privacy argument (approximate DP: (ε, δ)-DP, add/remove-one neighbours; never pure ε-DP).

    * **Bounded records.** Features are clipped into their declared bounds, scaled to [0, 1]
      and centred at 1/2 (a public shift); a regression target is clipped into its declared
      bounds and scaled to [0, 1]; labels come from the declared classes.
    * **A public sampling rate.** The private row count ``n`` is never used. A noisy count
      ``N̂ = n + N(0, σ_count²)`` (sensitivity 1, exact discrete Gaussian noise) is released first,
      with ``σ_count`` the least noise whose Rényi curve ``α/(2σ_count²)`` converts to
      ``(ε_count, δ/10)`` with ``ε_count ≤ count_share·ε``. The rate
      is ``q = min(1, max(batch_size/N̂, epochs/MAX_STEPS))``, rounded to a quarter power of two,
      and the number of steps
      ``T = ⌈epochs/q⌉``: functions of ``N̂`` and public settings only.
    * **Passes chosen from public values.** With ``epochs="auto"`` each of the public candidates
      ¼, ½, 1, 2, 3, 5, 10, 20 gets its ``(q, T)`` as above and its σ as below, and the fit keeps the
      most passes whose signal-to-noise ``√(T)·q/σ`` is at least ``1/√2`` of the best and whose
      steps' noise ``σ`` stays below the expected batch ``q·N̂`` (else the fewest of those near the
      best; :func:`~dpcore.models._dpsgd_accounting.choose_schedule`). The choice reads ε, δ,
      ``count_share``, ``batch_size``, ``MAX_STEPS`` and ``N̂`` only: post-processing of the
      released count, at no privacy cost, and two tables with the same noisy count get the same
      passes.
    * **Poisson subsampling.** At every step each record joins the batch independently with
      probability ``q`` — the sampling the bound below analyses (a shuffled fixed-size batch
      would be another mechanism). The batches are drawn from the fit's secret ``structure``
      stream and never released: the amplification by subsampling rests on that.
    * **Per-example clipping.** Each record's gradient with respect to all parameters at once
      is scaled to L2 norm at most ``clip``, so one record moves a step's gradient sum by at
      most ``clip`` in L2.
    * **Exact discrete Gaussian noise.** Each step's sum is rounded to a public fixed-point grid
      (:meth:`~dpcore.mechanisms.Gaussian.grid_for`, for ``d`` parameters) and gets discrete Gaussian noise on that
      grid (:class:`~dpcore.mechanisms.Gaussian`), with variance in grid steps at least
      ``(s·σ)²``, where ``s = clip/grid + ⌈√d⌉`` bounds the rounded sum's L2 sensitivity in steps.
      One step, unsampled, therefore has the Rényi curve ``ε(α) ≤ α/(2σ²)`` at every order
      ``α > 1`` (Canonne, Kamath & Steinke 2020: the multivariate discrete Gaussian is
      ``½(Δ/σ)²``-zCDP for integer shifts Δ) — the continuous Gaussian's curve, but nothing more:
      the continuous Gaussian's exact subsampled curve and its privacy loss distribution are not
      proved for the discrete one.
    * **Accounting from that curve alone.** Once the count has fixed ``q`` and ``T``, a
      Poisson-subsampled step is accounted by Zhu & Wang's (2019, Theorem 5) bound for *any*
      mechanism with a given Rényi curve, at integer orders, capped by the curve itself
      (:mod:`dpcore.models._subsampled_rdp`); the ``T`` steps compose by adding their curves, and
      the sum is converted to (ε, δ) by ``dp_accounting``'s conversion (Canonne, Kamath & Steinke
      2020, Prop. 12). ``σ`` is the least noise multiplier (to 0.1 %, by bisection, never rounded
      to the public side) for which the steps are ``(ε − ε_count, 9δ/10)``-DP.
    * **Count and steps together.** The steps' rate and length depend on the released count, so
      their Rényi curve does too; adding the count's curve to the one chosen would not bound the
      joint divergence, which needs the largest of those curves at each order (with σ calibrated
      that way on Adult's settings, the largest converts to ε = 1.56 for a declared 1). Instead the two compose by basic composition of
      approximate DP, which holds for a mechanism chosen after seeing the first one's output as
      long as its guarantee is the same for every output: the count is ``(ε_count, δ/10)``-DP and,
      whatever it released, the steps are ``(ε − ε_count, 9δ/10)``-DP, so the fit is (ε, δ)-DP.
      That covers the passes chosen from the count: σ is calibrated to the same
      ``(ε − ε_count, 9δ/10)`` for every ``(q, T)`` the rule can pick, candidates not kept are
      never run, and the rule is a fixed function of the count, so the steps run are one
      mechanism, chosen by the count's output, with that guarantee whatever it released (the
      tests check every rate and step count from counts of 10 to 10⁷ rows and every candidate).
    * **Looser than the continuous Gaussian's accounting.** Zhu & Wang's terms from the third
      order on carry a factor 3, so a fit needs more noise than a continuous-Gaussian accountant
      would claim, and at a small ε over many steps the amplification by sampling is mostly lost
      (benchmarks/README.md §13). ``accountant="pld"`` is accepted for saved settings and accounts
      the same way.
    * **Post-processing.** Dividing by the public expected batch size ``q·N̂``, the updates,
      the averaging of the iterates and every prediction use the released noisy sums and
      ``N̂`` only.

    Does the bound's precondition hold for the mechanism as implemented? Zhu & Wang's bound needs
    (i) the step's Rényi curve at every integer order from 2 to α, (ii) for every pair of
    add/remove neighbouring *batches*, (iii) a Poisson sample that is never released.
    (i) The discrete Gaussian's curve holds at every real order, so at every integer one; only
    integer orders are used. (ii) Adding a record to the table adds at most one clipped gradient
    (norm ≤ ``clip``) to a batch's exact sum, whatever the other records and the parameters are;
    rounding each coordinate to the grid moves a sum by at most half a step per coordinate, so
    two rounded sums differ by an integer vector of L2 norm at most ``clip/grid + √d ≤ s`` steps,
    for every pair of batches, the empty one included. The grid, ``s`` and σ depend on public
    settings only. (iii) Every (record, step) pair joins with probability ``q`` independently,
    drawn from the secret ``structure`` stream; batches, their sizes and their members are never
    released (the update divides by the public ``q·N̂``, not by the batch's size). Steps are
    adaptive (each uses the parameters the earlier noisy sums made); the bound holds for every
    fixed parameter value, and Rényi DP composes adaptively. The noisy count is unsampled and
    discrete Gaussian too, with the same curve. What the proof does not cover: the gradients, their
    clipping and their sum are computed in floating point, and the argument treats them as real
    numbers. A float sum's error (about 10⁻¹⁶ of its size per addition, ``clip`` times a few ulps
    for a clipped norm) is many orders of magnitude below one grid step, and σ² in steps is
    rounded up, but no bound on it is proved here; nor is the inclusion draw (numpy's geometric
    jumps in floating point) exactly Bernoulli(``q``).

    People with several rows are protected by group privacy: the registry fits at the per-row
    (ε, δ) whose guarantee for a person of up to ``k`` rows is the declared one
    (:func:`dpcore.budget.persons.per_row`). Under a replace-one unit of protection the ledger converts
    the add/remove guarantee, ``(2ε, (1 + e^ε)δ)``.

    Defaults (``epochs``, ``batch_size``, ``learning_rate``, ``clip``, ``count_share``) were
    fixed once on public data — UCI Adult (logistic) and California Housing (StatLib, linear) —
    with features scaled by declared bounds, and never tuned on the owner's table. They suit
    tables in general because nothing in them depends on the table: features live in [0, 1]
    and are centred, so a record's gradient is at most ``√(1 + d/4)`` times its residual and the
    clip only caps the large ones; the ``"auto"`` learning rate divides by that same bound, so a
    wide one-hot table gets smaller steps (checked on Adult one-hot, 120 columns: 0.840 at ε = 1,
    and on Nursery, five classes: 0.904); a batch of about 256 rows keeps the noise a small share
    of each step from a few thousand rows up, and on a few hundred rows the whole table is one
    batch. The number of steps is capped (``MAX_STEPS``), so a large table gets larger batches
    instead of a longer fit. The passes' rule (the candidates, the ``1/√2`` share, the most passes
    among near ties, steps mostly signal) was chosen on Adult (the full training set, and
    samples of 2,000 and 300 rows) and California Housing: on Adult at δ = 1e-5 it keeps 20
    passes from ε = 1 up and takes 10 at ε = 0.5, 3 at ε = 0.3 and a quarter at ε = 0.1, where 20
    would leave σ in the hundreds (benchmarks/README.md §13). It suits tables in general because
    it reads only the table's noisy size, ε and δ: the ratio is the noise of the averaged update,
    the same for any table of that size; the share leaves room for the optimiser, which only
    more passes help (on Adult's 2,000-row sample at ε = 1, 5 passes beat the ratio's best, 1);
    and where the ratio cannot tell the candidates apart, a table of one batch keeps the 20
    passes it always had.
"""

#: The argument after :data:`NEIGHBOURS` (one catalog sentence group).
_PRIVACY_ARGUMENT = N_(
    "A noisy row count (Gaussian, sensitivity 1) fixes the sampling rate, so the private count is never used; at every "
    "step each record joins the batch independently with that rate, its gradient is clipped to L2 norm clip, and the "
    "batch's gradient sum gets exact discrete Gaussian noise. The noise is calibrated with a Rényi-DP bound for sampled "
    "steps that needs only the noise's own guarantee (Zhu & Wang 2019), so it holds for the noise actually drawn; the "
    "count and all steps together are (ε, δ)-DP: approximate DP, not pure ε-DP."
)
_PRIVACY_SUMMARY = NEIGHBOURS + _PRIVACY_ARGUMENT


class _DPSGDBase(DPEstimatorMixin):
    """The shared loop: per-example gradients of a linear model or one hidden layer, clipped and noised."""

    delta: float
    epochs: float | str
    batch_size: int
    learning_rate: float | str
    clip: float
    hidden_units: int
    count_share: float
    accountant: str
    _auto_rate: float

    def _check_params(self) -> None:
        if not check_delta(self.delta) > 0:
            raise ValueError(f"delta must be in (0, 1): DP-SGD is approximate DP, got {self.delta!r}")
        if self.epochs != "auto" and not (isinstance(self.epochs, int | float) and self.epochs > 0):
            raise ValueError(f"epochs must be > 0 or 'auto', got {self.epochs!r}")
        check_positive_int(self.batch_size, "batch_size")
        check_positive_int(self.hidden_units, "hidden_units", minimum=0)
        if self.learning_rate != "auto" and not (isinstance(self.learning_rate, int | float) and self.learning_rate > 0):
            raise ValueError(f"learning_rate must be > 0 or 'auto', got {self.learning_rate!r}")
        if not self.clip > 0:
            raise ValueError(f"clip must be > 0, got {self.clip!r}")
        if not 0 < self.count_share < 1:
            raise ValueError(f"count_share must be in (0, 1), got {self.count_share!r}")
        if self.accountant not in ACCOUNTANTS:
            raise ValueError(f"accountant must be one of {ACCOUNTANTS}, got {self.accountant!r}")

    def _step_size(self, inputs: int) -> float:
        """The learning rate; ``"auto"``: ``_auto_rate / (1 + d/4)``, a public function of the number of features.

        ``1 + d/4`` bounds ‖x‖² of a centred record with its intercept, so it bounds the loss's
        curvature: the step stays stable on wide tables (one-hot columns) as on narrow ones.
        """
        if self.learning_rate == "auto":
            return self._auto_rate / (1.0 + (inputs - 1) / 4.0)
        return float(self.learning_rate)

    def _sampling(self, noisy_rows: float, epochs: float) -> tuple[float, int]:
        """The public sampling rate and number of steps for ``epochs`` passes, from the noisy count only.

        The rate is rounded to a grid of quarter powers of two, so similar tables share one
        calibration of the noise (it is cached) and the expected batch stays within 10 % of
        ``batch_size``.
        """
        rate = min(1.0, max(self.batch_size / max(noisy_rows, 1.0), epochs / MAX_STEPS))
        rate = min(1.0, 2.0 ** (round(4 * math.log2(rate)) / 4))
        return rate, steps_for(epochs, rate, MAX_STEPS)

    def _epoch_choices(self) -> tuple[float, ...]:
        """The passes the fit may choose from: :data:`EPOCH_CHOICES` for ``"auto"``, else the one given."""
        return EPOCH_CHOICES if self.epochs == "auto" else (float(self.epochs),)

    def _schedule(self, noisy_rows: float, count_noise: float) -> tuple[float, float, int, float]:
        """``(epochs, q, T, σ)`` from the noisy count and public settings only (:func:`choose_schedule`)."""
        return choose_schedule(
            self.epsilon,
            self.delta,
            count_noise,
            noisy_rows,
            lambda epochs: self._sampling(noisy_rows, epochs),
            self._epoch_choices(),
            self.accountant,
        )

    def _rows_for_sampling(self, noisy_rows: float, n: int) -> float:
        """The row count the sampling rate is set from: the noisy one, never ``n`` (a test's broken variant uses ``n``)."""
        return noisy_rows

    def _train(self, X_unit: NDArray[np.float64], targets: NDArray[np.float64], outputs: int, link: str) -> None:
        """Run DP-SGD on features in [0, 1] and ``targets`` (n, outputs); ``link`` is identity, sigmoid or softmax."""
        self._check_params()
        structure, noise = self._random_streams()
        X = np.hstack([X_unit - 0.5, np.ones((len(X_unit), 1))])  # centred, with the intercept's 1
        count_noise = count_noise_for(self.count_share * self.epsilon, self.delta)
        counted = Gaussian(1.0 / (2.0 * count_noise**2), 1.0, noise).randomise(float(len(X)))
        self.noisy_rows_ = float(counted)
        rows = self._rows_for_sampling(self.noisy_rows_, len(X))
        self.epochs_, self.sampling_rate_, self.n_steps_, self.noise_multiplier_ = self._schedule(rows, count_noise)
        self._link = link
        params = self._initial(X.shape[1], outputs, structure)
        step_size = self._step_size(X.shape[1])
        step_noise = Gaussian(1.0 / (2.0 * self.noise_multiplier_**2), self.clip, noise)
        expected_batch = self.sampling_rate_ * max(rows, 1.0)
        averaged = np.zeros_like(params)
        tail = self.n_steps_ // 2  # the last half of the iterates is averaged (post-processing)
        batches = poisson_batches(structure, len(X), self.n_steps_, self.sampling_rate_)
        for t, batch in enumerate(batches):
            gradient_sum = self._clipped_gradient_sum(params, X[batch], targets[batch])
            params = params - step_size * step_noise.randomise(gradient_sum) / expected_batch
            if t >= tail:
                averaged += params
        self.coef_ = averaged / (self.n_steps_ - tail)
        self._set_spent(self.epsilon, self.delta)

    # --- the model: parameters flattened into one vector ---------------------------------

    def _shapes(self, inputs: int, outputs: int) -> list[tuple[int, int]]:
        if self.hidden_units:
            return [(inputs, self.hidden_units), (self.hidden_units + 1, outputs)]
        return [(inputs, outputs)]

    def _initial(self, inputs: int, outputs: int, rng: np.random.Generator) -> NDArray[np.float64]:
        """Zeros for a linear model; small public random weights for a hidden layer (drawn without the data)."""
        self._layer_shapes = self._shapes(inputs, outputs)
        parts = []
        for i, shape in enumerate(self._layer_shapes):
            if self.hidden_units and i == 0:
                parts.append(rng.normal(0.0, 1.0 / np.sqrt(inputs), size=shape).ravel())
            else:
                parts.append(np.zeros(shape).ravel())
        return np.concatenate(parts)

    def _unpack(self, params: NDArray[np.float64]) -> list[NDArray[np.float64]]:
        out, start = [], 0
        for rows, cols in self._layer_shapes:
            out.append(params[start : start + rows * cols].reshape(rows, cols))
            start += rows * cols
        return out

    def _forward(self, params: NDArray[np.float64], X: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Output scores and the last layer's input (with its 1 for the intercept)."""
        layers = self._unpack(params)
        inputs = X
        if self.hidden_units:
            inputs = np.hstack([np.tanh(X @ layers[0]), np.ones((len(X), 1))])
        return inputs @ layers[-1], inputs

    def _clipped_gradient_sum(
        self, params: NDArray[np.float64], X: NDArray[np.float64], y: NDArray[np.float64]
    ) -> NDArray[np.float64]:
        """Σ of every record's gradient clipped to L2 norm ``clip``, in closed form for the whole batch.

        A record's gradient of an outer product ``a ⊗ r`` has norm ``‖a‖·‖r‖``, so the norms come
        without forming the per-record gradients; the clipped sum is a matrix product.
        """
        scores, last_inputs = self._forward(params, X)
        residual = _apply_link(scores, self._link) - y  # d loss / d score, for the three losses
        norm_sq = (last_inputs**2).sum(axis=1) * (residual**2).sum(axis=1)
        layers = self._unpack(params)
        if self.hidden_units:
            hidden = last_inputs[:, :-1]
            back = (residual @ layers[-1][:-1].T) * (1.0 - hidden**2)
            norm_sq = norm_sq + (X**2).sum(axis=1) * (back**2).sum(axis=1)
        scale = np.minimum(1.0, self.clip / np.maximum(np.sqrt(norm_sq), 1e-12))
        sums = [last_inputs.T @ (residual * scale[:, None])]
        if self.hidden_units:
            sums.insert(0, X.T @ (back * scale[:, None]))
        return np.concatenate([s.ravel() for s in sums])

    def weights_as_records(self, feature_names: Sequence[str] | None = None) -> list[dict[str, Any]]:
        """A linear model's weights as plain data: how far each output moves across a feature's declared range.

        Empty for a model with a hidden layer (its weights do not read feature by feature).
        """
        if self.hidden_units:
            return []
        names = list(feature_names) if feature_names is not None else [f"x{i}" for i in range(self.n_features_in_)]
        weights = self._unpack(self.coef_)[0][:-1]  # the last row is the intercept
        outputs = self._output_names()
        return [
            {"feature": str(names[i]), "output": outputs[j], "weight": float(weights[i, j])}
            for i in range(weights.shape[0])
            for j in range(weights.shape[1])
        ]

    def _output_names(self) -> list[str]:
        return ["prediction"]

    def spending_in_words(self) -> str:
        """What the fit spent its budget on, in a sentence for the owner."""
        return _(
            "Spent on one noisy row count and {steps} steps of gradient descent ({epochs} passes over the rows{chosen}); "
            "at each step every row joined the "
            "batch with probability {rate} (about {batch} rows), its pull on the model was capped, and Gaussian noise "
            "(multiplier {sigma}) was added. A Rényi-DP bound that holds for that noise adds the count and the steps up to "
            "ε = {epsilon}, δ = {delta} (approximate DP)."
        ).format(
            steps=f"{self.n_steps_:,}",
            epochs=f"{self.epochs_:g}",
            chosen=_(", chosen from ε and the noisy row count") if self.epochs == "auto" else "",
            rate=f"{self.sampling_rate_:.3g}",
            batch=f"{self.sampling_rate_ * max(self.noisy_rows_, 1.0):,.0f}",
            sigma=f"{self.noise_multiplier_:.3g}",
            epsilon=f"{self.epsilon_spent_:g}",
            delta=f"{self.delta_spent_:g}",
        )

    def _scores(self, X: ArrayLike) -> NDArray[np.float64]:
        X_unit = self._check_predict_input(X)
        X_aug = np.hstack([X_unit - 0.5, np.ones((len(X_unit), 1))])
        return self._forward(self.coef_, X_aug)[0]


def _apply_link(scores: NDArray[np.float64], link: str) -> NDArray[np.float64]:
    if link == "sigmoid":
        return expit(scores)
    if link == "softmax":
        return softmax(scores, axis=1)
    return scores


_PARAMETERS = r"""
    Parameters
    ----------
    epsilon : float, default 1.0
    delta : float, default 1e-5
        DP-SGD is approximate DP: ``δ`` must be in (0, 1).
    epochs : float or "auto", default "auto"
        Expected passes over the data: ``T = ⌈epochs/q⌉`` steps. ``"auto"``: chosen among
        ¼, ½, 1, 2, 3, 5, 10 and 20 from ε, δ, the noisy count and ``batch_size`` (Notes), so a
        small ε gets fewer, less noisy steps.
    batch_size : int, default 256
        Expected batch size; the sampling rate is ``batch_size/N̂`` with ``N̂`` the noisy count.
    learning_rate : float or "auto", default "auto"
        ``"auto"``: ``{learning_rate} / (1 + d/4)`` for ``d`` features — ``1 + d/4`` bounds a centred
        record's ‖x‖² with its intercept, hence the loss's curvature, so steps stay stable on wide
        tables as on narrow ones.
    clip : float, default 1.0
        L2 bound on each record's gradient.
    hidden_units : int, default 0
        0: a linear model; otherwise one hidden layer of this many ``tanh`` units.
    count_share : float, default 0.02
        The share of ε that sets the noisy row count's noise.
    accountant : {{"rdp", "pld"}}, default "rdp"
        Both account by the subsampled Rényi bound of the Notes; ``"pld"`` is kept so saved settings
        still load (a privacy loss distribution of the subsampled discrete Gaussian is not derived).
    bounds : (lower, upper), optional
        Declared feature bounds; default [0, 1].
    random_state : None, int or Generator
"""


class DPSGDRegressor(TargetScalingMixin, RegressorMixin, _DPSGDBase):
    __doc__ = (
        r"""(ε, δ)-DP linear regression (or one hidden layer) by DP-SGD, squared loss on the target scaled to [0, 1].
"""
        + _PARAMETERS.format(learning_rate=3)
        + r"""    target_bounds : (lower, upper), optional
        Declared target bounds; default [0, 1].

    Attributes
    ----------
    coef_ : the averaged parameters (flattened)
    noisy_rows_, epochs_, sampling_rate_, n_steps_, noise_multiplier_ : float, float, float, int, float
        The released count and the public settings it fixed (``epochs_``: the passes used).
    epsilon_spent_, delta_spent_ : float

    Notes
    -----"""
        + _PRIVACY
        + r"""
    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).random((2000, 3)); y = X[:, 0]
    >>> DPSGDRegressor(epsilon=4.0, random_state=0).fit(X, y).predict(X[:2]).shape
    (2,)
    """
    )

    privacy_summary = _PRIVACY_SUMMARY
    _auto_rate = 3.0  # squared loss: curvature ‖x‖²

    def __init__(
        self,
        *,
        epsilon: float = 1.0,
        delta: float = 1e-5,
        epochs: float | str = "auto",
        batch_size: int = 256,
        learning_rate: float | str = "auto",
        clip: float = 1.0,
        hidden_units: int = 0,
        count_share: float = 0.02,
        accountant: str = "rdp",
        bounds: Bounds | None = None,
        target_bounds: Bounds | None = None,
        random_state: RandomStateLike = None,
    ) -> None:
        self.epsilon = epsilon
        self.delta = delta
        self.epochs = epochs
        self.batch_size = batch_size
        self.learning_rate = learning_rate
        self.clip = clip
        self.hidden_units = hidden_units
        self.count_share = count_share
        self.accountant = accountant
        self.bounds = bounds
        self.target_bounds = target_bounds
        self.random_state = random_state

    def fit(self, X: ArrayLike, y: ArrayLike) -> Self:
        X, y = self._check_fit_input(X, y, classifier=False)
        y_unit = self._unit_target(y)
        # Start the intercept at the middle of the declared target range (a public constant).
        self._train(self._unit(X), (y_unit - 0.5)[:, None], 1, "identity")
        return self

    def predict(self, X: ArrayLike) -> NDArray[np.float64]:
        return self._from_unit_target(np.clip(self._scores(X)[:, 0] + 0.5, 0.0, 1.0))


class DPSGDClassifier(DeclaredClassesMixin, ClassifierMixin, _DPSGDBase):
    __doc__ = (
        r"""(ε, δ)-DP logistic (two classes) or softmax regression (or one hidden layer) by DP-SGD.
"""
        + _PARAMETERS.format(learning_rate=40)
        + r"""    classes : list, optional
        Declared labels (read from the data with a warning if missing).

    Attributes
    ----------
    classes_ : the declared labels
    coef_ : the averaged parameters (flattened)
    noisy_rows_, epochs_, sampling_rate_, n_steps_, noise_multiplier_ : float, float, float, int, float
        The released count and the public settings it fixed (``epochs_``: the passes used).
    epsilon_spent_, delta_spent_ : float

    Notes
    -----"""
        + _PRIVACY
        + r"""
    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).random((2000, 3)); y = (X[:, 0] > 0.5).astype(int)
    >>> DPSGDClassifier(epsilon=4.0, classes=[0, 1], random_state=0).fit(X, y).predict_proba(X[:2]).shape
    (2, 2)
    """
    )

    privacy_summary = _PRIVACY_SUMMARY
    _auto_rate = 40.0  # log-loss: curvature at most ‖x‖²/4

    def __init__(
        self,
        *,
        epsilon: float = 1.0,
        delta: float = 1e-5,
        epochs: float | str = "auto",
        batch_size: int = 256,
        learning_rate: float | str = "auto",
        clip: float = 1.0,
        hidden_units: int = 0,
        count_share: float = 0.02,
        accountant: str = "rdp",
        bounds: Bounds | None = None,
        classes: Sequence[Any] | None = None,
        random_state: RandomStateLike = None,
    ) -> None:
        self.epsilon = epsilon
        self.delta = delta
        self.epochs = epochs
        self.batch_size = batch_size
        self.learning_rate = learning_rate
        self.clip = clip
        self.hidden_units = hidden_units
        self.count_share = count_share
        self.accountant = accountant
        self.bounds = bounds
        self.classes = classes
        self.random_state = random_state

    def fit(self, X: ArrayLike, y: ArrayLike) -> Self:
        X, y = self._check_fit_input(X, y, classifier=True)
        codes = self._encode_labels(y)
        known = codes >= 0
        X_unit, codes = self._unit(X)[known], codes[known]
        k = len(self.classes_)
        if k <= 2:
            self._train(X_unit, (codes == k - 1).astype(float)[:, None], 1, "sigmoid")
        else:
            self._train(X_unit, np.eye(k)[codes], k, "softmax")
        return self

    def _output_names(self) -> list[str]:
        if len(self.classes_) > 2:
            return [str(c) for c in self.classes_]
        return [_("log-odds of {label}").format(label=self.classes_[-1])]

    def predict_proba(self, X: ArrayLike) -> NDArray[np.float64]:
        scores = self._scores(X)
        if len(self.classes_) > 2:
            return _apply_link(scores, "softmax")
        p = _apply_link(scores[:, 0], "sigmoid")
        return np.column_stack([1 - p, p]) if len(self.classes_) == 2 else np.ones((len(p), 1))

    def predict(self, X: ArrayLike) -> NDArray[Any]:
        proba = self.predict_proba(X)  # checks the model is fitted before classes_ is read
        return self.classes_[np.argmax(proba, axis=1)]
