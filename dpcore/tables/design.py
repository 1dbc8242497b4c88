"""What a model learns from: the declared table turned into numbers, and the domain that goes with them.

A :class:`Design` is built once from a table and its :class:`~dpcore.tables.schema.Schema` and then
serves every caller that fits models: :func:`dpcore.training.train` (the Train page and
``dpcore train``), the Compare page's sweeps and the benchmarks. Everything a model is told
about the domain — feature bounds, target bounds, classes, the number of levels of each coded
category — comes from the declarations, never from the rows, so a model built from a design
reads its domain from public knowledge only.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from dpcore.budget.persons import bound_keys, per_row, person_keys
from dpcore.exceptions import DataError
from dpcore.i18n import _
from dpcore.tables.schema import Normaliser, Schema
from dpcore.validation import Bounds, RandomStateLike

ENCODINGS = ("ordinal", "onehot")
MIN_ROWS = 20
# The mechanisms a model uses unless the owner picks others (the Privacy page, --count-noise):
# geometric noise keeps counts whole; "gumbel" is the exponential mechanism itself, sampled exactly.
DEFAULT_COUNT_NOISE = "geometric"
DEFAULT_SELECTION = "gumbel"


@dataclass
class ModelContext:
    """What a model needs besides its data: budget, declared domain, chosen mechanisms.

    ``params`` holds hyper-parameters by the estimator's own names; a name the estimator does
    not take is ignored, and the budget, domain and mechanisms always come from the fields.
    ``epsilon`` and ``delta`` are per person: with ``rows_per_person`` = k > 1 the model is
    built with the per-row budget whose group-privacy guarantee is that (:func:`dpcore.budget.persons.per_row`).
    """

    n_features: int
    epsilon: float = 1.0
    bounds: Bounds | None = None
    target_bounds: tuple[float, float] | None = None
    classes: list[Any] | None = None
    delta: float = 1e-5
    count_noise: str = "laplace"
    selection: str = "gumbel"
    categorical_levels: dict[int, int] = field(default_factory=dict)
    random_state: RandomStateLike = None
    params: dict[str, Any] = field(default_factory=dict)
    rows_per_person: int = 1

    def per_row(self) -> ModelContext:
        """This context with the budget one row gets, so that one person of up to k rows gets ``epsilon``."""
        if self.rows_per_person == 1:
            return self
        epsilon, delta = per_row(self.epsilon, self.delta, self.rows_per_person)
        return replace(self, epsilon=epsilon, delta=delta, rows_per_person=1)


@dataclass(frozen=True)
class Design:
    """Features and target of the usable rows, with their declared domain.

    Attributes
    ----------
    X, y : ndarray
        The rows that have a usable target value (:class:`~dpcore.tables.schema.Normaliser`): numeric
        features in their units (models clip them to ``bounds``), categories as codes or 0/1
        columns, a numeric target clipped to its declared bounds, a categorical target as labels.
    task : {"regression", "classification"}
    feature_names : list of str
        One name per column of ``X`` (a one-hot column is ``"column=category"``).
    bounds : tuple of two arrays
        The declared range of every column of ``X``.
    target_bounds : tuple of two floats or None
        The declared range of a numeric target.
    classes : list of str or None
        The declared categories of a categorical target.
    categorical_levels : dict
        ``{column of X: number of levels}`` for categories coded as one column each.
    encoding : {"ordinal", "onehot"}
    schema : Schema
        The declarations the design was made from (for model cards and readable output).
    n_rows : int
        Rows of the table, with those whose target was missing or undeclared (owner's eyes only).
    name : str
        What to call the table in tables and charts.
    rows_per_person : int
        With a privacy-unit column, at most this many rows of each person were kept (a random
        subset) and every ε given to :meth:`context` is per person.
    rows_over_bound : int
        Rows left out by that bound or for having no person (owner's eyes only).
    groups : ndarray or None
        With a privacy unit, a code per row of ``X`` naming its person (never a feature): held-out
        rows are chosen by person, so nobody is both trained on and tested on.
    """

    X: np.ndarray
    y: np.ndarray
    task: str
    feature_names: list[str]
    bounds: tuple[np.ndarray, np.ndarray]
    target_bounds: tuple[float, float] | None
    classes: list[str] | None
    categorical_levels: dict[int, int] = field(default_factory=dict)
    encoding: str = "ordinal"
    schema: Schema | None = None
    n_rows: int = 0
    name: str = ""
    rows_per_person: int = 1
    rows_over_bound: int = 0
    groups: np.ndarray | None = None

    @classmethod
    def from_table(
        cls,
        frame: pd.DataFrame,
        schema: Schema,
        encoding: str = "ordinal",
        min_rows: int = MIN_ROWS,
        random_state: RandomStateLike = None,
    ) -> Design:
        """Turn ``frame`` into a design with ``schema``'s declarations.

        With a privacy-unit column, at most ``schema.rows_per_person`` rows of each person are
        kept first (:func:`~dpcore.budget.persons.bound_keys`, drawn with ``random_state``).

        Raises
        ------
        DataError
            If the declarations are incomplete (no target, a numeric column without bounds, …)
            or fewer than ``min_rows`` rows have a usable target. The message names columns,
            never a cell value.
        """
        if encoding not in ENCODINGS:
            raise ValueError(f"encoding must be one of {ENCODINGS}, got {encoding!r}")
        schema.check(frame, need_target=True)
        k, over_bound, groups = schema.rows_per_person, 0, None
        normaliser = Normaliser(schema, encoding=encoding)
        y, usable = normaliser.target(frame)
        X = normaliser.features(frame[usable])
        if schema.privacy_unit is not None:
            # Rows without a usable target go first (a filter on each row), so the bound spends
            # a person's k places on rows a model can use.
            keys = person_keys(frame[schema.privacy_unit][usable])
            keep = bound_keys(keys, k, random_state)
            X, y, groups = X[keep], y[keep], pd.factorize(keys[keep])[0]
            over_bound = len(keep) - int(keep.sum())
        if len(y) < min_rows:
            raise DataError(
                _("Fewer than {min_rows} rows have a usable target value; a model cannot be trained on so few.").format(
                    min_rows=min_rows
                )
            )
        target = schema.target
        assert target is not None  # schema.check(need_target=True) made sure
        numeric = target.kind == "numeric"
        return cls(
            X=X,
            y=y,
            task="regression" if numeric else "classification",
            feature_names=normaliser.feature_names(),
            bounds=normaliser.feature_bounds(),
            target_bounds=target.bounds if numeric else None,
            classes=None if numeric else list(target.categories),
            categorical_levels=normaliser.categorical_levels(),
            encoding=encoding,
            schema=schema,
            n_rows=len(frame),
            rows_per_person=k if schema.privacy_unit is not None else 1,
            rows_over_bound=over_bound,
            groups=groups,
        )

    @classmethod
    def domain(cls, schema: Schema, encoding: str = "ordinal") -> Design:
        """The declared domain of ``schema``'s table as a design without rows.

        What a model is told about the domain (bounds, classes, names, levels) comes from the
        declarations alone, so a table read in parts (:mod:`dpcore.backends.tables`) builds its
        models from this (:meth:`context`) and fits them on its rows wherever they live.
        """
        if encoding not in ENCODINGS:
            raise ValueError(f"encoding must be one of {ENCODINGS}, got {encoding!r}")
        schema.check(need_target=True)
        target = schema.target
        assert target is not None  # schema.check(need_target=True) made sure
        normaliser = Normaliser(schema, encoding=encoding)
        names = normaliser.feature_names()
        numeric = target.kind == "numeric"
        return cls(
            X=np.empty((0, len(names))),
            y=np.empty(0, dtype=float if numeric else str),
            task="regression" if numeric else "classification",
            feature_names=names,
            bounds=normaliser.feature_bounds(),
            target_bounds=target.bounds if numeric else None,
            classes=None if numeric else list(target.categories),
            categorical_levels=normaliser.categorical_levels(),
            encoding=encoding,
            schema=schema,
            rows_per_person=schema.rows_per_person if schema.privacy_unit is not None else 1,
        )

    @property
    def n_features(self) -> int:
        return int(self.X.shape[1])

    @property
    def n_without_target(self) -> int:
        """Rows left out because their target was missing or not a declared category."""
        return max(self.n_rows - self.rows_over_bound - len(self.y), 0)

    def context(
        self,
        epsilon: float = 1.0,
        *,
        params: dict[str, Any] | None = None,
        random_state: int | None = None,
        count_noise: str = "laplace",
        selection: str = "gumbel",
    ) -> ModelContext:
        """What the registry needs to build any model for this design at ``epsilon``."""
        return ModelContext(
            n_features=self.n_features,
            epsilon=epsilon,
            bounds=self.bounds,
            target_bounds=self.target_bounds,
            classes=self.classes,
            count_noise=count_noise,
            selection=selection,
            categorical_levels=dict(self.categorical_levels),
            random_state=random_state,
            params=dict(params or {}),
            rows_per_person=self.rows_per_person,
        )
