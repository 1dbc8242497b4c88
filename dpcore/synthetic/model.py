"""Fit a graphical model to the noisy marginals and draw rows from it, with McKenna's Private-PGM (``mbi``).

Post-processing only: the fit and the draw see the noisy marginals of
:mod:`dpcore.synthetic.measure` and their noise's standard deviations, never the data, so they
cost no privacy. The inference (mirror descent over the marginal polytope) is Private-PGM's
estimator; this module only translates. The rows are drawn along the library's junction tree by
:mod:`dpcore.synthetic.sampling`, from the copy's own generator.

``mbi`` runs on JAX and is imported when a copy is first made, so the engine imports without
it. Before that first import JAX is switched to float64 (float32 stalls the estimator on large
tables). Compiling the fit's program is most of a copy's time (on Adult about 1.4 s with tracing, against
0.4 s for its 1,000 steps and 0.1 s for the draw; on a 76-column analog 10 s, 4.5 and 0.1), so it is compiled
with :data:`FAST_COMPILE` and kept in JAX's persistent compilation cache when it takes at least
:data:`CACHED_COMPILE_SECONDS` (under ``$XDG_CACHE_HOME/dpstudio/jax``, or :data:`COMPILE_CACHE_ENV`; ``off``
turns it off): a later copy of the same table, in another process, reuses it. The cache holds programs
only: the noisy measurements, their σ and the row count are the programs' inputs, never constants in them, so
nothing of the data or its noise is written to disk. Only large programs: Private-PGM also compiles many small
ones, which that cache would make slower (the library warns of it).
All are settings of the JAX process, changed only when a synthetic copy is made.
"""

from __future__ import annotations

import gc
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from functools import cache
from typing import Any, NamedTuple

import numpy as np

from dpcore.exceptions import DataError
from dpcore.i18n import _
from dpcore.progress import Stage, TimeLeft
from dpcore.synthetic.inference import constant_tables, junction_tree, node_beliefs
from dpcore.synthetic.measure import Measurement
from dpcore.synthetic.sampling import draw_cells

#: Mirror-descent iterations of the fit. Chosen on Adult and small tables. The loss still falls slowly past it (at
#: ε = 1: 849 after 1,000 steps and 731 after 2,000 on Adult, 10,701 and 10,683 on a 76-column analog) and a step
#: takes 0.4 ms on Adult, 4.5 ms on the analog.
ITERATIONS = 1000
#: The fit's convergence test (the library's): it stops once the loss falls by at most this share in 50 steps, twice in
#: a row. Chosen on Adult, where it never stops early (ε = 1 and 0.3, and widened to 30 columns), and on a 76-column
#: analog of 2,700 rows, where it stops after about 700 steps at ε = 1 and 550 at ε = 0.3 with 2-way errors no worse
#: (0.166 against 0.167, 0.321 against 0.330: the steps it saves only fit the noise closer). AIM's refits use the same.
#: Privacy: the loss it reads is a function of the noisy marginals alone, so where the fit stops is post-processing.
TOLERANCE = 1e-3
#: The library reports its fit every this many iterations.
REPORT_EVERY = 50
#: Drawing the rows costs about this share of the model's set-up: the fitted model carries the tables the draw needs,
#: so it takes 0.1 s after a set-up of about 2 s on Adult's 14 columns and of 11 s on a 76-column analog of 2,700 rows
#: (0.05 and 0.01, wall clock on a 2-core machine, ``benchmarks/synthetic_steps.py``).
DRAWING_PER_SETUP = 0.05
#: XLA's options for the fit's program: LLVM's optimisations off and the older fusion emitters. Its compiling is most of
#: a copy's time and its 1,000 steps a small part: on Adult the program compiles in 0.8 s instead of 3.3 and its steps
#: run in 0.5 s instead of 0.1; on a 76-column analog of 2,700 rows in 11 s instead of 22, its steps in 5.6 s instead
#: of 1.6; the compiler's peak memory falls from 1.9 to 1.0 GB there (2-core machine, one run each).
FAST_COMPILE = {"xla_backend_optimization_level": 0, "xla_cpu_use_fusion_emitters": False}
#: A machine's first copy, before it has timed one of its own: seconds of set-up per measured marginal, and of a step
#: per marginal. Measured on a 2-core machine: 0.046 and 1.3e-5 on Adult (40 marginals), 0.058 and 2.7e-5 on a
#: 76-column analog of 2,700 rows (223 marginals), both from the command line with the compile cache off.
FIRST_SET_UP, FIRST_STEP = 0.05, 2e-5
#: Where JAX keeps compiled programs between processes ("off": nowhere).
COMPILE_CACHE_ENV = "DPSTUDIO_JAX_CACHE"
#: Programs compiled in less time than this are not written to the persistent cache.
CACHED_COMPILE_SECONDS = 0.5


def fit_stages(n_marginals: int) -> list[Stage]:
    """The fit's stages for :class:`~dpcore.progress.TimeLeft`, in units of measured marginals and of iterations.

    The set-up (JAX compiling the model) reports nothing until its first :data:`REPORT_EVERY` iterations are done,
    so it is predicted: from earlier copies on this machine when there were some
    (:class:`~dpcore.progress.CostMemory`, which the caller's priors come from), else from :data:`FIRST_SET_UP`
    and :data:`FIRST_STEP`. The iterations are then measured as they go, and the drawing is predicted from the
    set-up measured in this run (:data:`DRAWING_PER_SETUP`).
    """
    return [
        Stage("set-up", n_marginals, prior=FIRST_SET_UP),
        Stage("iterations", ITERATIONS - REPORT_EVERY, prior=FIRST_STEP * n_marginals),
        Stage("drawing", n_marginals, prior=DRAWING_PER_SETUP * FIRST_SET_UP),
    ]


@cache
def private_pgm() -> Any:
    """The ``mbi`` module (with JAX set up for it), or :class:`DataError` with a sentence when it is not installed."""
    try:
        import jax
    except ImportError:
        raise DataError(
            _(
                "Synthetic copies need the Private-PGM library (mbi, with JAX), which is not installed. "
                "Install DP Studio's synthetic extra, or make a randomized copy instead."
            )
        ) from None
    jax.config.update("jax_enable_x64", True)
    jax.config.update("jax_enable_compilation_cache", False)  # off while mbi is imported (it warns otherwise)
    try:
        import mbi
    except ImportError:
        raise DataError(
            _(
                "Synthetic copies need the Private-PGM library (mbi, with JAX), which is not installed. "
                "Install DP Studio's synthetic extra, or make a randomized copy instead."
            )
        ) from None
    cache_directory = compile_cache_directory()
    if cache_directory is not None:
        jax.config.update("jax_compilation_cache_dir", cache_directory)
        jax.config.update("jax_persistent_cache_min_compile_time_secs", CACHED_COMPILE_SECONDS)
        jax.config.update("jax_enable_compilation_cache", True)
    return mbi


def compile_cache_directory() -> str | None:
    """Where compiled programs are kept between processes (None: the owner turned it off)."""
    chosen = os.environ.get(COMPILE_CACHE_ENV)
    if chosen == "off":
        return None
    if chosen:
        return chosen
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "dpstudio", "jax")


def names(shape: tuple[int, ...]) -> list[int]:
    """The library's attribute names for our column positions (the owner's names never reach it).

    Integers, not strings: the library orders its messages through sets of names, and Python hashes
    strings differently in every process but integers the same, so with integers a model of the same
    cliques compiles to the same programs in every process and the persistent cache finds them.
    """
    return list(range(len(shape)))


def noisy_total(measurements: list[Measurement]) -> float:
    """The number of rows the noisy marginals agree on (inverse-variance average of their sums), at least 1."""
    sums = np.array([m.noisy.sum() for m in measurements])
    variances = np.array([m.stddev**2 * m.noisy.size for m in measurements])
    return max(1.0, float(np.average(sums, weights=1.0 / variances)))


def fit_and_sample(
    measurements: list[Measurement],
    shape: tuple[int, ...],
    rows: int,
    rng: np.random.Generator,
    work: TimeLeft | None = None,
    iterations: int = ITERATIONS,
    warm_start: Any = None,
) -> np.ndarray:
    """Fit Private-PGM to ``measurements`` and draw ``rows`` rows of cells (rows × columns) with the copy's ``rng``.

    ``work`` (with the stages of :func:`fit_stages`) is told of every report of the fit; ``warm_start``: a model of
    the same measurements fitted earlier (AIM's last refit), which the fit starts from.
    """
    steps = {"done": 0}
    if work is not None:
        work.resize("iterations", iterations - REPORT_EVERY)
        work.begin("set-up", _("Setting up the model (compiling it for {count} marginals)…").format(count=len(measurements)))

    def tick(marginals: Any) -> None:
        steps["done"] += REPORT_EVERY
        if work is None:
            return
        import jax

        # JAX runs the steps while Python goes on: wait for this block's, so the progress says what is done.
        jax.block_until_ready(marginals)
        if steps["done"] == REPORT_EVERY:
            work.tick(_("Model set up; fitting it…"), len(measurements))
            setup = work.stage("set-up")
            work.stage("drawing").prior = DRAWING_PER_SETUP * setup.seconds / max(setup.done, 1.0)
            work.begin("iterations")
        elif steps["done"] <= iterations:
            work.tick(
                _("Fitting the model: {done} of {iterations} iterations").format(done=steps["done"], iterations=iterations),
                REPORT_EVERY,
            )

    with work.beating() if work is not None else nullcontext():  # compiling says nothing for seconds
        model = estimate(measurements, shape, iterations=iterations, callback=tick, warm_start=warm_start)
        if work is not None:
            work.begin("drawing", _("Drawing the rows…"))
        cells = draw(model, shape, rows, rng)
    if work is not None:
        work.tick(_("Rows drawn."), len(measurements))
    return cells


def estimate(
    measurements: list[Measurement],
    shape: tuple[int, ...],
    *,
    iterations: int = ITERATIONS,
    callback: Any = None,
    warm_start: Any = None,
    tol: float | None = TOLERANCE,
) -> Any:
    """Private-PGM's model of ``measurements`` (mirror descent, warm-started from an earlier model when given)."""
    mbi = private_pgm()
    labels = names(shape)
    domain = mbi.Domain(labels, shape)
    # In one order whatever order they were chosen in: the compiled programs then depend on the model's cliques alone.
    ordered = sorted(measurements, key=lambda m: (len(m.clique), m.clique))
    linear = [mbi.LinearMeasurement(m.noisy, tuple(labels[i] for i in m.clique), stddev=m.stddev) for m in ordered]
    return mirror_descent()().estimate(
        domain,
        linear,
        known_total=noisy_total(measurements),
        iters=iterations,
        callback_fn=callback,
        warm_start=warm_start,
        tol=tol,
    )


@cache
def mirror_descent() -> Any:
    """Private-PGM's mirror descent with its Armijo line search, each step running its message passing once.

    The library's step runs the message passing twice: at the current potentials (whose marginals the
    step before had computed already, as its candidate's) and at the candidate. Here each step
    evaluates its candidate only and keeps the current point's marginals, loss and gradient in the
    state, so the iterates are the library's, one step later (the first step evaluates the start;
    an infinite loss before it makes it accepted, at the library's first step size), with half the
    message passing to compile and run. The step reads the marginals off the junction tree's node
    beliefs, which the state keeps too: the fitted model carries them (:func:`fitted_model`), and the
    draw needs no program of its own. On Adult the library compiled four large programs per model
    (the start, the steps, the end and the draw: 1.4, 4.4, 1.8 and 1.6 s of compiling), this one.
    The loss, the step sizes and the acceptance test are the library's: ``tests/synthetic/test_model.py``
    checks 40 steps, refused ones among them, against its own to 1e-9. Over hundreds of steps the line
    search amplifies rounding, in the library's own runs as in ours (a start moved by 1e-15 ends 2e-2
    away after 190 steps), and the final losses agree to 1e-6. The library's other settings (a given
    step size, oracle or mesh, constraints) run the library's own steps.
    """
    mbi = private_pgm()
    import jax
    from mbi import marginal_oracles

    growth, shrink = 1.01, 0.5  # the library's step-size factors after an accepted and a refused step

    class MirrorDescent(mbi.estimation.MirrorDescent):  # type: ignore[name-defined]
        def estimate(  # type: ignore[no-untyped-def]
            self,
            domain,
            loss_fn,
            known_total=None,
            constraints=(),
            iters=ITERATIONS,
            callback_fn=None,
            warm_start=None,
            tol=None,
            patience=2,
        ):
            """The library's loop of blocks of steps, with its convergence test, started without a compile per table.

            The library copies every array of the start apart before its first block (which takes them over) with
            ``jnp.copy``, which compiles a program per table shape: 63 on a 76-column analog, 1.5 s. Ours copies
            them on the device, with nothing to compile (a warm start, as AIM's refits, still compiles the small
            programs of the library's ``expand``), and pauses Python's cycle collector while the first block is
            traced and compiled (it walked the tracer's many objects again and again: 0.8 s there).
            """
            if not (isinstance(loss_fn, list) and loss_fn and known_total is not None) or self._the_library_s(constraints):
                return super().estimate(domain, loss_fn, known_total, constraints, iters, callback_fn, warm_start, tol, patience)
            loss_fn = mbi.marginal_loss.from_linear_measurements(loss_fn, domain)
            state = self._init(domain, loss_fn, known_total, warm_start=warm_start)
            state = jax.tree.map(lambda table: jax.device_put(table, may_alias=False), state)
            previous, stalls = np.inf, 0
            for block in range(-(-iters // mbi.estimation.CALLBACK_EVERY)):
                with collector_paused(block == 0):
                    state = self._multi_step(state, loss_fn, known_total, ())
                if callback_fn is not None:
                    callback_fn(state.marginals)
                if tol is not None:
                    loss = float(state.loss)
                    stalls = stalls + 1 if previous - loss <= tol * max(abs(loss), 1.0) else 0
                    previous = loss
                    if stalls >= patience:
                        break
            return self._finalize(state, known_total)

        def _the_library_s(self, constraints: Any) -> bool:
            """Settings our steps do not cover (constraints, a given step size, oracle or mesh): the library's steps."""
            return bool(constraints) or any(setting is not None for setting in (self.stepsize, self.marginal_oracle, self.mesh))

        def _init(self, domain, loss_fn, known_total, *, warm_start=None, constraints=()):  # type: ignore[no-untyped-def]
            if self._the_library_s(constraints):
                return super()._init(domain, loss_fn, known_total, warm_start=warm_start, constraints=constraints)
            cliques = loss_fn.cliques
            nothing = constant_tables(domain, cliques, lambda cells: 0.0)  # copied apart before the first block
            potentials = nothing
            if warm_start is not None:
                earlier = warm_start if isinstance(warm_start, mbi.CliqueVector) else warm_start.potentials
                potentials = earlier.expand(cliques)
            nodes = junction_tree(potentials)[0]
            # The library's first step size (inversely proportional to the loss's Lipschitz constant), once grown.
            alpha = 2.0 / (loss_fn.lipschitz * known_total) / growth
            return Fit(
                marginals=nothing,
                potentials=potentials,
                alpha=alpha,
                loss=jax.device_put(np.float64(np.inf)),
                gradient=nothing,
                beliefs=constant_tables(domain, nodes, lambda cells: 0.0),
                candidate=potentials,
            )

        def _step(self, state, loss_fn, known_total, constraints=()):  # type: ignore[no-untyped-def]
            if not isinstance(state, Fit):
                return super()._step(state, loss_fn, known_total, constraints=constraints)
            nodes = junction_tree(state.candidate)[0]
            beliefs = marginal_oracles.message_passing_stable(state.candidate.expand(list(nodes)), known_total)
            marginals = beliefs.contract(loss_fn.cliques)
            loss, gradient = jax.value_and_grad(loss_fn)(marginals)
            accepted = state.loss - loss >= 0.5 * state.alpha * state.gradient.dot(state.marginals - marginals)
            # A branch, not an elementwise select of every table: XLA compiles it in a third less time on Adult.
            marginals, potentials, loss, gradient, beliefs = jax.lax.cond(
                accepted,
                lambda: (marginals, state.candidate, loss, gradient, beliefs),
                lambda: (state.marginals, state.potentials, state.loss, state.gradient, state.beliefs),
            )
            alpha = jax.lax.select(accepted, growth * state.alpha, shrink * state.alpha)
            candidate = potentials - alpha * gradient
            return Fit(marginals, potentials, alpha, loss, gradient, beliefs, candidate)

        # The library's block of steps, compiled for a quick start (see FAST_COMPILE).
        _multi_step = jax.jit(
            mbi.estimation.Estimator._multi_step.__wrapped__,
            static_argnames=("self",),
            donate_argnames=("state",),
            compiler_options=fast_compile_options(),
        )

        def _finalize(self, state, known_total, constraints=()):  # type: ignore[no-untyped-def]
            if not isinstance(state, Fit):
                return super()._finalize(state, known_total, constraints=constraints)
            marginals, beliefs = state.marginals, state.beliefs
            if not np.isfinite(float(state.loss)):  # no step was accepted (none run, or a start without a finite loss)
                beliefs = node_beliefs(state.potentials, known_total)
                marginals = beliefs.contract(state.potentials.cliques)
            return fitted_model()(potentials=state.potentials, marginals=marginals, total=known_total, beliefs=beliefs)

    return MirrorDescent


class Fit(NamedTuple):
    """The state of :func:`mirror_descent`: the current point (potentials, their marginals, loss, gradient and node
    beliefs), the step size, and the candidate the next step evaluates.

    The marginals could be summed from the beliefs again, but every step reads them (the acceptance test, and the
    library's report of the fit, ``state[0]``), so they are kept, first.
    """

    marginals: Any
    potentials: Any
    alpha: Any
    loss: Any
    gradient: Any
    beliefs: Any
    candidate: Any


@contextmanager
def collector_paused(paused: bool) -> Iterator[None]:
    """Python's cycle collector off inside (when ``paused``), back on when the last fit that paused it is done.

    Process-wide: two sessions of the app may compile at once, and the first to finish must not turn the
    collector back on under the other.
    """
    if not paused:
        yield
        return
    with _PAUSES_LOCK:
        if _pauses["count"] == 0:
            _pauses["was_on"] = gc.isenabled()
            gc.disable()
        _pauses["count"] += 1
    try:
        yield
    finally:
        with _PAUSES_LOCK:
            _pauses["count"] -= 1
            if _pauses["count"] == 0 and _pauses["was_on"]:
                gc.enable()


_PAUSES_LOCK = threading.Lock()
_pauses: dict[str, Any] = {"count": 0, "was_on": True}


@cache
def fast_compile_options() -> dict[str, Any]:
    """:data:`FAST_COMPILE` when this XLA knows those options, else none (an unknown option would stop every fit)."""
    import jax

    try:
        jax.jit(lambda value: value + 1.0, compiler_options=FAST_COMPILE).lower(1.0).compile()
    except Exception:  # noqa: BLE001 (XLA's error for an unknown option has no type of its own)
        return {}
    return dict(FAST_COMPILE)


@cache
def fitted_model() -> Any:
    """Private-PGM's ``MarkovRandomField`` with the junction tree's node beliefs, from which the rows are drawn."""
    import chex  # type: ignore[import-untyped]

    mbi = private_pgm()

    @chex.dataclass(frozen=True, kw_only=False)
    class FittedModel(mbi.MarkovRandomField):  # type: ignore[name-defined]
        beliefs: Any = None

    return FittedModel


def draw(model: Any, shape: tuple[int, ...], rows: int, rng: np.random.Generator, method: str = "round") -> np.ndarray:
    """``rows`` rows of cells (rows × columns) drawn from a fitted model with the copy's own generator.

    ``method``: ``"round"`` (each group's rows spread evenly over its distribution: the copy's marginals close to
    the model's) or ``"sample"`` (independent rows); see :mod:`dpcore.synthetic.sampling`.
    """
    if rows <= 0:
        return np.zeros((0, len(shape)), dtype=np.int64)
    return draw_cells(model, names(shape), int(rows), rng, method)
