"""Recipes: the owner's choices of a session, saved as YAML, to make the same releases again on new data.

A recipe holds what the Data, Privacy, Train, Export and Groups pages were told — never a data
value, a seed or a password:

- ``source``: a file path, or a connection named in the secrets file (or a URL without a password)
  with a ``table`` or a read-only ``query``;
- ``schema``: the column declarations (roles, public bounds and categories, the privacy unit), as
  the schema file holds them. A bound or category list read from the data is refused: it would
  carry data values, and no release may use it;
- ``privacy``: the unit of protection and the total (ε, δ) a *new* dataset starts with (an existing
  dataset keeps its total: raising one is a deliberate act on the Privacy page);
- ``models``, ``copies`` and ``groups``: each release with its ε (and δ) and its settings — a
  model's hyper-parameters, a randomized copy's plan, a synthetic copy's noise, a group map's columns.

:func:`load_recipe` checks a recipe field by field and names the first wrong field in a sentence;
:func:`planned_costs` states, before anything runs, what each release will cost in the dataset's
unit, so ``dpcore run`` refuses a recipe that would overspend before it spends anything.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from dpcore.exceptions import DataError
from dpcore.i18n import N_, _, short

RECIPE_FORMAT = 1
UNITS = ("add/remove", "replace-one")
COPY_KINDS = ("randomized", "synthetic")
SYNTHETIC_NOISES = ("gaussian", "laplace")
SYNTHETIC_METHODS = ("mst", "aim")
ENCODINGS = ("ordinal", "onehot")
#: The dataset history's events of a recipe run: recorded in English, shown translated.
RUN_EVENT = N_("recipe run")
RUN_STOPPED_EVENT = N_("recipe run stopped")
#: The δ an approximate-DP model spends when the recipe states none (the command line's default).
DEFAULT_MODEL_DELTA = 1e-5


class RecipeError(DataError):
    """A recipe that cannot be used, in one sentence naming its field (never a value of the data)."""


@dataclass(frozen=True)
class Source:
    """Where the table is read: a ``file``, or a ``connection`` (a name or a URL) with a ``table`` or a ``query``."""

    file: str | None = None
    connection: str | None = None
    table: str | None = None
    query: str | None = None

    def to_dict(self) -> dict[str, str]:
        return {k: v for k, v in vars(self).items() if v is not None}


@dataclass(frozen=True)
class ModelStep:
    model: str
    epsilon: float
    delta: float | None = None
    params: dict[str, Any] = field(default_factory=dict)
    encoding: str = "ordinal"

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"model": self.model, "epsilon": self.epsilon}
        if self.delta is not None:
            out["delta"] = self.delta
        if self.params:
            out["params"] = dict(self.params)
        if self.encoding != "ordinal":
            out["encoding"] = self.encoding
        return out


@dataclass(frozen=True)
class CopyStep:
    """A randomized copy by its ``plan``, or a synthetic copy at ``epsilon`` (its plan chooses the columns, if given)
    by ``method``, MST or AIM (with the owner's declared ``workload``, if any)."""

    kind: str
    plan: dict[str, Any] | None = None
    epsilon: float | None = None
    delta: float | None = None
    noise: str = "gaussian"
    accept_noise: bool = False
    method: str = "mst"
    workload: list[list[str]] | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind}
        if self.kind == "synthetic":
            out |= {"epsilon": self.epsilon, "noise": self.noise, "method": self.method}
            if self.delta is not None:
                out["delta"] = self.delta
            if self.workload is not None:
                out["workload"] = [list(entry) for entry in self.workload]
        elif self.accept_noise:
            out["accept_noise"] = True
        if self.plan is not None:
            out["plan"] = self.plan
        return out


@dataclass(frozen=True)
class GroupsStep:
    columns: list[str]
    epsilon: float
    resolution: int | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"columns": list(self.columns), "epsilon": self.epsilon}
        if self.resolution is not None:
            out["resolution"] = self.resolution
        return out


@dataclass(frozen=True)
class Recipe:
    """A session's choices, ready to be made again (see the module's docstring)."""

    name: str
    source: Source
    schema: dict[str, Any]
    unit: str = "add/remove"
    total_epsilon: float = 1.0
    total_delta: float = 1e-5
    dataset: str | None = None
    models: list[ModelStep] = field(default_factory=list)
    copies: list[CopyStep] = field(default_factory=list)
    groups: list[GroupsStep] = field(default_factory=list)

    @property
    def releases(self) -> int:
        return len(self.models) + len(self.copies) + len(self.groups)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"recipe": RECIPE_FORMAT, "name": self.name, "source": self.source.to_dict()}
        if self.dataset:
            out["dataset"] = self.dataset
        out["privacy"] = {"unit": self.unit, "epsilon": self.total_epsilon, "delta": self.total_delta}
        out["schema"] = self.schema
        for name in ("models", "copies", "groups"):
            steps = getattr(self, name)
            if steps:
                out[name] = [step.to_dict() for step in steps]
        return out

    def to_yaml(self) -> str:
        import yaml

        head = (
            "# A DP Studio recipe: rerun it with `dpcore run THIS_FILE [--source NAME|URL --table T | --query SQL]`.\n"
            "# It holds the owner's choices only: no data values, no seed, no password.\n"
        )
        return head + yaml.safe_dump(self.to_dict(), sort_keys=False, allow_unicode=True, width=100)


# --- reading and checking -------------------------------------------------------------------


def _wrong(where: str, expected: str) -> RecipeError:
    return RecipeError(
        _("The recipe's field '{field}' must be {expected}. Correct it in the recipe file and run it again.").format(
            field=where, expected=expected
        )
    )


def _mapping(value: object, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise _wrong(where, _("a mapping of names to values"))
    return value


def _known_fields(value: Mapping[str, Any], where: str, known: tuple[str, ...]) -> None:
    for key in value:
        if key not in known:
            raise RecipeError(
                _(
                    "The recipe's field '{field}' is not one DP Studio knows (expected one of: {known}). Remove or rename it."
                ).format(field=f"{where}.{key}" if where else str(key), known=", ".join(known))
            )


def _text(value: object, where: str, *, optional: bool = False) -> str | None:
    if value is None and optional:
        return None
    if not isinstance(value, str) or not value.strip():
        raise _wrong(where, _("a text that is not empty"))
    return value


def _number(value: object, where: str, *, low: float = 0.0, high: float = math.inf, optional: bool = False) -> float | None:
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or not low < value < high:
        if high == math.inf:
            raise _wrong(where, _("a number above {low}").format(low=short(low)))
        raise _wrong(where, _("a number above {low} and below {high}").format(low=short(max(low, 0.0)), high=short(high)))
    return float(value)


def _list(value: object, where: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise _wrong(where, _("a list"))
    return value


def _source(value: object) -> Source:
    data = _mapping(value, "source")
    _known_fields(data, "source", ("file", "connection", "table", "query"))
    source = Source(
        **{key: _text(data.get(key), f"source.{key}", optional=True) for key in ("file", "connection", "table", "query")}
    )
    if (source.file is None) == (source.connection is None):
        raise RecipeError(_("The recipe's 'source' must name either a 'file' or a 'connection' (with a 'table' or a 'query')."))
    if source.connection is not None and (source.table is None) == (source.query is None):
        raise RecipeError(
            _("The recipe's 'source' names a connection: give either its 'table' or a 'query', not both nor neither.")
        )
    if source.connection is not None and "://" in source.connection:
        from sqlalchemy.engine import make_url

        try:
            password = make_url(source.connection).password
        except Exception:
            raise _wrong("source.connection", _("a connection's name in the secrets file, or a database URL")) from None
        if password:
            raise RecipeError(
                _(
                    "The recipe's 'source.connection' holds a password, which a recipe never keeps. Name the connection "
                    "in the secrets file and write its name there instead."
                )
            )
    return source


def _json_file(value: str, where: str, folder: Path | None) -> object:
    """The JSON file a recipe names instead of writing it out (a schema or a plan), relative to the recipe's folder."""
    import json

    path = Path(value) if folder is None else folder / value
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        raise RecipeError(
            _("The recipe's field '{field}' names the file {path}, which cannot be read as JSON.").format(field=where, path=path)
        ) from None


def _schema(value: object, folder: Path | None) -> dict[str, Any]:
    from dpcore.tables.schema import Schema

    if isinstance(value, str):
        value = _json_file(value, "schema", folder)
    data = dict(_mapping(value, "schema"))
    try:
        schema = Schema.from_dict(data)
        schema.check()
    except (DataError, TypeError, ValueError) as error:
        problem = str(error) if isinstance(error, DataError) else _("a column's declaration is not in the expected form.")
        raise RecipeError(_("The recipe's field '{field}': {problem}").format(field="schema", problem=problem)) from None
    read = schema.read_from_data()
    if read:
        raise RecipeError(
            _(
                "The recipe's schema has bounds or categories read from the data for {columns}; a recipe keeps only "
                "public declarations. Declare them (or estimate them privately) and save the recipe again."
            ).format(columns=", ".join(read))
        )
    return schema.to_dict()


def _model(value: object, where: str) -> ModelStep:
    from dpcore.models.registry import models_for

    data = _mapping(value, where)
    _known_fields(data, where, ("model", "epsilon", "delta", "params", "encoding"))
    model = _text(data.get("model"), f"{where}.model")
    ours = {spec.key for task in ("regression", "classification") for spec in models_for(task, kinds=("ours",))}
    if model not in ours | {"dp_boosting", "dp_extra_trees"}:
        raise _wrong(f"{where}.model", _("a DP model's id, as `dpcore train --help` lists them"))
    params = dict(_mapping(data.get("params") or {}, f"{where}.params"))
    for name, setting in params.items():
        if isinstance(setting, bool) or not isinstance(setting, int | str):
            raise _wrong(f"{where}.params.{name}", _("a whole number or a word"))
    encoding = data.get("encoding", "ordinal")
    if encoding not in ENCODINGS:
        raise _wrong(f"{where}.encoding", _("'ordinal' or 'onehot'"))
    return ModelStep(
        str(model),
        _number(data.get("epsilon"), f"{where}.epsilon") or 0.0,
        _number(data.get("delta"), f"{where}.delta", high=1.0, optional=True),
        params,
        str(encoding),
    )


def _copy(value: object, where: str, folder: Path | None) -> CopyStep:
    from dpcore.release.plan import ReleasePlan

    data = _mapping(value, where)
    _known_fields(data, where, ("kind", "plan", "epsilon", "delta", "noise", "accept_noise", "method", "workload"))
    kind = data.get("kind", "randomized")
    if kind not in COPY_KINDS:
        raise _wrong(f"{where}.kind", _("'randomized' or 'synthetic'"))
    plan = data.get("plan")
    if isinstance(plan, str):
        plan = _json_file(plan, f"{where}.plan", folder)
    if plan is not None:
        try:
            plan = ReleasePlan.from_dict(plan).to_dict()
        except DataError as error:
            raise RecipeError(_("The recipe's field '{field}': {problem}").format(field=f"{where}.plan", problem=error)) from None
    elif kind == "randomized":
        raise _wrong(f"{where}.plan", _("the copy's plan (as `dpcore plan` writes it)"))
    accept_noise = data.get("accept_noise", False)
    if not isinstance(accept_noise, bool):
        raise _wrong(f"{where}.accept_noise", _("true or false"))
    noise = data.get("noise", "gaussian")
    if noise not in SYNTHETIC_NOISES:
        raise _wrong(f"{where}.noise", _("'gaussian' or 'laplace'"))
    method = data.get("method", "mst")
    if method not in SYNTHETIC_METHODS:
        raise _wrong(f"{where}.method", _("'mst' or 'aim'"))
    workload = data.get("workload")
    if workload is not None and not (
        method == "aim"
        and isinstance(workload, list)
        and all(isinstance(entry, list) and all(isinstance(name, str) for name in entry) for entry in workload)
    ):
        raise _wrong(f"{where}.workload", _("a list of lists of column names, with method 'aim'"))
    epsilon = _number(data.get("epsilon"), f"{where}.epsilon", optional=kind == "randomized")
    delta = _number(data.get("delta"), f"{where}.delta", high=1.0, optional=True)
    return CopyStep(str(kind), plan, epsilon, delta, str(noise), accept_noise, str(method), workload)


def _groups(value: object, where: str) -> GroupsStep:
    data = _mapping(value, where)
    _known_fields(data, where, ("columns", "epsilon", "resolution"))
    columns = _list(data.get("columns"), f"{where}.columns")
    if not 2 <= len(columns) <= 4 or not all(isinstance(c, str) and c for c in columns):
        raise _wrong(f"{where}.columns", _("a list of 2 to 4 numeric columns' names"))
    resolution = data.get("resolution")
    if resolution is not None and (isinstance(resolution, bool) or not isinstance(resolution, int) or resolution < 2):
        raise _wrong(f"{where}.resolution", _("a whole number of at least 2"))
    return GroupsStep(list(columns), _number(data.get("epsilon"), f"{where}.epsilon") or 0.0, resolution)


def recipe_from_dict(data: object, folder: Path | None = None) -> Recipe:
    """A checked :class:`Recipe` from its parsed YAML; :class:`RecipeError` names the first wrong field.

    A ``schema`` or a copy's ``plan`` may be the name of a JSON file instead (as ``dpcore plan``
    and the Data page save them), and ``source.file`` a path: relative ones are read from ``folder``,
    the recipe file's folder.
    """
    from dpcore.tables.schema import Schema

    top = _mapping(data, _("the whole recipe"))
    _known_fields(top, "", ("recipe", "name", "source", "dataset", "privacy", "schema", "models", "copies", "groups"))
    if top.get("recipe") != RECIPE_FORMAT:
        raise _wrong("recipe", _("the recipe format's number, {format}").format(format=RECIPE_FORMAT))
    privacy = _mapping(top.get("privacy") or {}, "privacy")
    _known_fields(privacy, "privacy", ("unit", "epsilon", "delta"))
    unit = privacy.get("unit", "add/remove")
    if unit not in UNITS:
        raise _wrong("privacy.unit", _("'add/remove' or 'replace-one'"))
    schema = _schema(top.get("schema"), folder)
    recipe = Recipe(
        name=str(_text(top.get("name"), "name")),
        source=_source(top.get("source")),
        schema=schema,
        unit=str(unit),
        total_epsilon=_number(privacy.get("epsilon", 1.0), "privacy.epsilon") or 1.0,
        total_delta=_number(privacy.get("delta", 1e-5), "privacy.delta", low=-1e-300, high=1.0) or 0.0,
        dataset=_text(top.get("dataset"), "dataset", optional=True),
        models=[_model(step, f"models[{i}]") for i, step in enumerate(_list(top.get("models"), "models"), 1)],
        copies=[_copy(step, f"copies[{i}]", folder) for i, step in enumerate(_list(top.get("copies"), "copies"), 1)],
        groups=[_groups(step, f"groups[{i}]") for i, step in enumerate(_list(top.get("groups"), "groups"), 1)],
    )
    if recipe.releases == 0:
        raise RecipeError(_("The recipe makes no release: add a model, a copy or a group map to it."))
    if recipe.models and Schema.from_dict(recipe.schema).task is None:
        raise RecipeError(
            _("The recipe has models, but its schema declares no target column (role 'target') for them to predict.")
        )
    return recipe


def load_recipe(path: str | os.PathLike[str]) -> Recipe:
    """The recipe in the YAML file ``path``, checked (:class:`RecipeError` for a file that cannot be used)."""
    import yaml

    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        raise RecipeError(_("The recipe file {path} cannot be read as UTF-8 text.").format(path=path)) from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as error:
        line = getattr(getattr(error, "problem_mark", None), "line", None)
        where = _(" (near line {line})").format(line=line + 1) if line is not None else ""
        raise RecipeError(_("The recipe file {path} is not valid YAML{where}.").format(path=path, where=where)) from None
    recipe = recipe_from_dict(data, Path(path).parent)
    if recipe.source.file is not None and not Path(recipe.source.file).is_absolute():
        recipe = replace(recipe, source=replace(recipe.source, file=str(Path(path).parent / recipe.source.file)))
    return recipe


# --- what it will cost ------------------------------------------------------------------------


@dataclass(frozen=True)
class PlannedCost:
    """One release of a recipe and what it costs in the dataset's unit (ε, and the δ it states)."""

    what: str
    epsilon: float
    delta: float = 0.0


def planned_costs(recipe: Recipe, unit: str) -> list[PlannedCost]:
    """What each release of ``recipe`` costs in a dataset of ``unit``, before anything is read or spent.

    Models and group maps are private under add/remove (converted to ``unit`` as the ledger does);
    a synthetic copy is calibrated in the dataset's own unit; a randomized copy costs its plan's
    per-record ε, plus the noisy row count where the unit needs one, times the rows a person may
    have (:func:`~dpcore.release.padding.copy_epsilon`). A copy that would be handed out again
    unchanged costs nothing when it is made; the plan counts it in full, so the check never lets
    a recipe through that could overspend.
    """
    from decimal import Decimal

    from dpcore.budget.units import ADD_REMOVE, convert
    from dpcore.models.registry import MODELS
    from dpcore.release import copy_epsilon, counted_rows_per_person
    from dpcore.release.plan import ReleasePlan
    from dpcore.synthetic.budget import DEFAULT_DELTA
    from dpcore.tables.schema import Schema
    from dpcore.validation import epsilon_decimal

    def converted(epsilon: float, delta: float = 0.0) -> tuple[float, float]:
        e, d = convert(epsilon_decimal(epsilon), Decimal(str(delta)), ADD_REMOVE, unit)
        return float(e), float(d)

    costs = []
    for model in recipe.models:
        approximate = model.model in MODELS and MODELS[model.model].approximate
        delta = (model.delta if model.delta is not None else DEFAULT_MODEL_DELTA) if approximate else 0.0
        costs.append(PlannedCost(_("model {model}").format(model=model.model), *converted(model.epsilon, delta)))
    k = counted_rows_per_person(Schema.from_dict(recipe.schema))
    for copy in recipe.copies:
        if copy.kind == "synthetic":
            # a copy that states no δ spends `dpcore synthesize`'s default with Gaussian noise
            delta = copy.delta if copy.delta is not None else (DEFAULT_DELTA if copy.noise == "gaussian" else 0.0)
            costs.append(PlannedCost(_("synthetic copy"), float(copy.epsilon or 0.0), float(delta)))
        else:
            plan = ReleasePlan.from_dict(copy.plan)
            costs.append(PlannedCost(_("randomized copy"), copy_epsilon(plan, unit, rows_per_person=k)))
    for groups in recipe.groups:
        costs.append(
            PlannedCost(_("group map of {columns}").format(columns=", ".join(groups.columns)), converted(groups.epsilon)[0])
        )
    return costs
