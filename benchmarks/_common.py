"""Shared helpers for the benchmarks: declared schemas, loading, sweeps, tables, CSV/PNG output.

Every schema below is a *public declaration* (category lists from the UCI ``.names`` files or
the data set's documented value sets, numeric bounds from public knowledge of the domain), so
no model reads a domain from the data. Where a declaration is weaker than that, the comment
says so.

Benchmarks measure models on raw data: the figures are for the owner's eyes (and for us), not
a differentially private release.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from dpcore.evaluate import fold_indices, plan_sweep, run_sweep  # noqa: E402
from dpcore.exceptions import PrivacyLeakWarning  # noqa: E402
from dpcore.models.registry import get  # noqa: E402
from dpcore.tables.design import Design  # noqa: E402
from dpcore.tables.loading import read_csv_path  # noqa: E402
from dpcore.tables.schema import ColumnSpec, Schema, load_schema  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "benchmarks" / "data"  # public tables with their provenance in data/README.md
RESULTS = ROOT / "benchmarks" / "results"


def quiet_warnings() -> None:
    """Silence library chatter that does not change results (diffprivlib deprecations, tiny classes in CV)."""
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    warnings.filterwarnings("ignore", category=FutureWarning)
    warnings.filterwarnings("ignore", message=".*least populated class.*")
    warnings.filterwarnings("ignore", category=UserWarning, module="sklearn")
    warnings.filterwarnings("ignore", message=".*fixed random_state.*")  # DP-EBM, seeded on purpose by seeded()
    warnings.filterwarnings("error", category=PrivacyLeakWarning)  # a benchmark must never read a domain from the data


# --- declared schemas --------------------------------------------------------------------


def _categorical(name: str, categories: Iterable[str], source: str, role: str = "feature") -> ColumnSpec:
    return ColumnSpec(name=name, role=role, kind="categorical", categories=[str(c) for c in categories], source=source)


def _numeric(name: str, lower: float, upper: float, source: str, role: str = "feature") -> ColumnSpec:
    return ColumnSpec(name=name, role=role, kind="numeric", lower=float(lower), upper=float(upper), source=source)


_MUSHROOM_NAMES = "agaricus-lepiota.names §7 (Attribute Information)"
# Letter codes per attribute, in the order the UCI .names file lists them ('?' in stalk-root is
# the file's "missing", which the normaliser codes as its own level).
MUSHROOM_CATEGORIES = {
    "cap-shape": "b c x f k s",
    "cap-surface": "f g y s",
    "cap-color": "n b c g r p u e w y",
    "bruises": "t f",
    "odor": "a l c y f m n p s",
    "gill-attachment": "a d f n",
    "gill-spacing": "c w d",
    "gill-size": "b n",
    "gill-color": "k n b h g r o p u e w y",
    "stalk-shape": "e t",
    "stalk-root": "b c u e z r",
    "stalk-surface-above-ring": "f y k s",
    "stalk-surface-below-ring": "f y k s",
    "stalk-color-above-ring": "n b c g o p e w y",
    "stalk-color-below-ring": "n b c g o p e w y",
    "veil-type": "p u",
    "veil-color": "n o w y",
    "ring-number": "n o t",
    "ring-type": "c e f l n p s z",
    "spore-print-color": "k n b h r o u w y",
    "population": "a c n s v y",
    "habitat": "g l m p u w d",
}

# UCI #76 "Nursery" (Olave, Rajkovic & Bohanec 1989): the value sets published on the UCI page /
# in nursery.names (no copy of the .names file is stored, but the hierarchical model's value
# sets are the documented ones; shared/data/README.md lists the same values).
NURSERY_CATEGORIES = {
    "parents": ["usual", "pretentious", "great_pret"],
    "has_nurs": ["proper", "less_proper", "improper", "critical", "very_crit"],
    "form": ["complete", "completed", "incomplete", "foster"],
    "children": ["1", "2", "3", "more"],
    "housing": ["convenient", "less_conv", "critical"],
    "finance": ["convenient", "inconv"],
    "social": ["nonprob", "slightly_prob", "problematic"],
    "health": ["recommended", "priority", "not_recom"],
}
NURSERY_CLASSES = ["not_recom", "recommend", "very_recom", "priority", "spec_prior"]

# house-votes-84.names §7: every vote is y or n; '?' ("did not vote / position unknown", §8) is
# read as missing and becomes its own level, which is what it means here.
VOTING_ISSUES = [
    "handicapped-infants",
    "water-project-cost-sharing",
    "adoption-of-the-budget-resolution",
    "physician-fee-freeze",
    "el-salvador-aid",
    "religious-groups-in-schools",
    "anti-satellite-test-ban",
    "aid-to-nicaraguan-contras",
    "mx-missile",
    "immigration",
    "synfuels-corporation-cutback",
    "education-spending",
    "superfund-right-to-sue",
    "crime",
    "duty-free-exports",
    "export-administration-act-south-africa",
]

# White Vinho Verde physico-chemistry (Cortez et al. 2009). Bounds are public knowledge of wine,
# not the data's min/max; a few extreme records are clipped, which is what declared bounds do.
WINE_BOUNDS = {
    # g/L tartaric acid: wines range from about 3 to 15 g/L titratable acidity (enology texts).
    "fixed acidity": (3.0, 15.0, "titratable acidity of wines, about 3-15 g/L tartaric (enology references)"),
    # g/L acetic acid: EU legal maximum for white wine is 18 meq/L ≈ 1.08 g/L (Reg. (EC) 606/2009 Annex I C).
    "volatile acidity": (0.0, 1.2, "EU legal limit for white wine ≈ 1.08 g/L acetic acid, rounded up"),
    # g/L: citric acid occurs at 0-1 g/L; the OIV caps added citric acid at 1 g/L.
    "citric acid": (0.0, 1.0, "OIV limit of 1 g/L citric acid in wine"),
    # g/L: EU labelling puts 'sweet' above 45 g/L; 60 g/L covers all but dessert wines.
    "residual sugar": (0.0, 60.0, "EU sweetness classes (sweet > 45 g/L); 60 g/L cap"),
    # g/L sodium chloride: wines typically 0.01-0.2 g/L; 0.3 g/L is a generous cap.
    "chlorides": (0.0, 0.3, "typical wine chloride 0.01-0.2 g/L (enology references); 0.3 g/L cap"),
    # mg/L: free SO2 is a fraction of total; 150 mg/L is far above sensory/legal practice.
    "free sulfur dioxide": (0.0, 150.0, "free SO2 is a fraction of total SO2; 150 mg/L cap"),
    # mg/L: EU maximum total SO2 for white wine 200 mg/L (250 with >5 g/L sugar, up to 400 for sweet wines).
    "total sulfur dioxide": (0.0, 300.0, "EU total SO2 limits for white wine (200-250 mg/L, up to 400 for sweet)"),
    # g/cm³: water is 1.000; dry wines sit just below, sweet wines above.
    "density": (0.985, 1.01, "wine density around water's 1.000 g/cm³ (dry below, sweet above)"),
    "pH": (2.5, 4.5, "wine pH lies between 2.5 and 4.5 (enology references)"),
    # g/L potassium sulphate.
    "sulphates": (0.0, 1.5, "potassium sulphate in wine rarely above 1-1.5 g/L"),
    # % vol: table wine is 8-15 % (EU minimum actual alcohol 8.5 %, still wine rarely above 15 %).
    "alcohol": (8.0, 15.0, "table wine alcohol 8-15 % vol (EU wine definitions)"),
}
WINE_QUALITY_BOUNDS = (0.0, 10.0)  # winequality.names §7: "quality (score between 0 and 10)"

# Daily Demand Forecasting Orders (Ferreira et al. 2016). Week of month 1-5 and day of week 2-6
# (Monday-Friday) come from the UCI description. The order counts have no published domain:
# the caps below are round numbers the benchmark author chose (knowing the table's summary
# statistics), so they are NOT independent of the data — acceptable for a benchmark only.
DEMAND_BOUNDS = {
    "Week of the month (first week, second, third, fourth or fifth week)": (1, 5, "UCI description: week 1-5"),
    "Day of the week (Monday to Friday)": (2, 6, "UCI description: Monday (2) to Friday (6)"),
    "Non-urgent order": (0, 1000, "round cap chosen by the benchmark author"),
    "Urgent order": (0, 1000, "round cap chosen by the benchmark author"),
    "Order type A": (0, 1000, "round cap chosen by the benchmark author"),
    "Order type B": (0, 1000, "round cap chosen by the benchmark author"),
    "Order type C": (0, 1000, "round cap chosen by the benchmark author"),
    "Fiscal sector orders": (0, 1000, "round cap chosen by the benchmark author"),
    "Orders from the traffic controller sector": (0, 100_000, "round cap chosen by the benchmark author"),
    "Banking orders (1)": (0, 250_000, "round cap chosen by the benchmark author"),
    "Banking orders (2)": (0, 250_000, "round cap chosen by the benchmark author"),
    "Banking orders (3)": (0, 250_000, "round cap chosen by the benchmark author"),
}
DEMAND_TARGET = "Target (Total orders)"
DEMAND_TARGET_BOUNDS = (0.0, 1000.0)  # round cap chosen by the benchmark author (see above)

ADULT_NUMERIC = ["age", "education-num", "capital-gain", "capital-loss", "hours-per-week"]


def mushroom_schema() -> Schema:
    columns = [_categorical("class", ["e", "p"], _MUSHROOM_NAMES + " (classes)", role="target")]
    columns += [_categorical(name, codes.split(), _MUSHROOM_NAMES) for name, codes in MUSHROOM_CATEGORIES.items()]
    return Schema(columns)


def nursery_schema() -> Schema:
    source = "UCI Nursery value sets"
    columns = [_categorical(name, values, source) for name, values in NURSERY_CATEGORIES.items()]
    return Schema([*columns, _categorical("class", NURSERY_CLASSES, source, role="target")])


def voting_schema() -> Schema:
    source = "house-votes-84.names §7"
    columns = [_categorical("class", ["democrat", "republican"], source, role="target")]
    return Schema(columns + [_categorical(issue, ["y", "n"], source) for issue in VOTING_ISSUES])


def wine_schema(binary: bool = False) -> Schema:
    columns = [_numeric(name, lo, hi, source) for name, (lo, hi, source) in WINE_BOUNDS.items()]
    if binary:
        columns.append(_categorical("good", ["no", "yes"], "quality >= 7 (derived label)", role="target"))
    else:
        columns.append(_numeric("quality", *WINE_QUALITY_BOUNDS, "winequality.names §7: score 0-10", role="target"))
    return Schema(columns)


def demand_schema() -> Schema:
    columns = [_numeric(name, lo, hi, source) for name, (lo, hi, source) in DEMAND_BOUNDS.items()]
    return Schema(
        [*columns, _numeric(DEMAND_TARGET, *DEMAND_TARGET_BOUNDS, "round cap chosen by the benchmark author", role="target")]
    )


def adult_schema(numeric_only: bool = False) -> Schema:
    """The bundled declared Adult schema (sample_data/adult.schema.json), optionally numeric features only."""
    schema = load_schema(ROOT / "sample_data" / "adult.schema.json")
    if numeric_only:
        for spec in schema.columns:
            if spec.role == "feature" and spec.name not in ADULT_NUMERIC:
                spec.role = "ignore"
    return schema


# --- data sets ---------------------------------------------------------------------------


def _from_frame(name: str, frame: pd.DataFrame, schema: Schema, encoding: str = "ordinal") -> Design:
    return replace(Design.from_table(frame, schema, encoding), name=name)


def load_dataset(name: str) -> Design:
    """One of: mushroom, nursery, voting, wine (regression), wine_binary, demand."""
    if name == "mushroom":
        frame, _ = read_csv_path(DATA / "mushroom" / "mushroom.csv")
        return _from_frame("Mushroom", frame, mushroom_schema())
    if name == "nursery":
        frame, _ = read_csv_path(DATA / "nursery" / "nursery.csv")
        return _from_frame("Nursery", frame, nursery_schema())
    if name == "voting":
        frame, _ = read_csv_path(DATA / "congressional_voting" / "house_votes_84.csv")
        return _from_frame("Congressional Voting", frame, voting_schema())
    if name in ("wine", "wine_binary"):
        frame, _ = read_csv_path(DATA / "wine_quality" / "winequality-white_comma.csv")
        if name == "wine":
            return _from_frame("White Wine Quality", frame, wine_schema())
        frame["good"] = np.where(pd.to_numeric(frame["quality"]) >= 7, "yes", "no")
        return _from_frame("White Wine (quality ≥ 7)", frame.drop(columns="quality"), wine_schema(binary=True))
    if name == "demand":
        frame, _ = read_csv_path(DATA / "daily_demand_forecasting_orders" / "daily_demand_orders.csv")
        return _from_frame("Daily Demand Orders", frame, demand_schema())
    raise ValueError(f"unknown data set {name!r}")


def adult_frames() -> tuple[pd.DataFrame, pd.DataFrame]:
    """Adult's given split as raw tables: train = sample_data/adult.csv, test = adult_test.csv (labels' '.' stripped)."""
    train, _ = read_csv_path(ROOT / "sample_data" / "adult.csv")
    test, _ = read_csv_path(DATA / "adult" / "adult_test.csv")
    test["income"] = test["income"].astype(str).str.strip().str.rstrip(".")
    return train, test


def load_adult(numeric_only: bool = False, encoding: str = "ordinal") -> tuple[Design, Design]:
    """Adult's given split (:func:`adult_frames`) as designs with the declared schema."""
    schema = adult_schema(numeric_only)
    train, test = adult_frames()
    return _from_frame("Adult (train)", train, schema, encoding), _from_frame("Adult (test)", test, schema, encoding)


# --- sweeps ------------------------------------------------------------------------------


def splits(y: np.ndarray, task: str, protocol: str, seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """``"cv5"``: shuffled (stratified for classification) 5-fold; ``"holdout"``: one shuffled 70/30 split."""
    if protocol == "cv5":
        return fold_indices(y, task, 5, shuffle=True, random_state=seed)
    from sklearn.model_selection import train_test_split

    stratify = y if task == "classification" else None
    train, test = train_test_split(np.arange(len(y)), test_size=0.3, random_state=seed, stratify=stratify)
    return [(np.sort(train), np.sort(test))]


def repeated_sweep(
    data: Design,
    models: list[str],
    epsilons: list[float],
    repetitions: int,
    protocol: str,
    seed: int,
    params: dict | None = None,
) -> pd.DataFrame:
    """Every model at every ε, ``repetitions`` times, each repetition on its own shuffled split(s).

    Non-private models are fitted once per split (ε = NaN). Uses :func:`dpcore.evaluate.run_sweep`,
    so seeds are derived per (model, ε, repetition, fold) from ``seed``.
    """
    frames = []
    for rep in range(repetitions):
        folds = splits(data.y, data.task, protocol, seed + 1000 * rep)
        tasks = [replace(t, repetition=rep) for t in plan_sweep(models, epsilons, len(folds), repetitions=1)]
        frames.append(run_sweep(tasks, data.X, data.y, folds, data.context(params=params), data.task, seed=seed))
    return pd.concat(frames, ignore_index=True)


def clipped_regression_sweep(
    data: Design,
    key: str,
    epsilons: list[float],
    repetitions: int,
    protocol: str,
    seed: int,
    params: dict | None = None,
) -> pd.DataFrame:
    """:func:`repeated_sweep` for one regression model, scored as fitted and with predictions clipped.

    Clipping to the declared target bounds is free post-processing. Same splits and per-task
    seeds as :func:`repeated_sweep`; each fitted model gives two rows with metric
    "MSE (normalised)": model ``key`` (raw predictions) and ``key + "+clip"`` (clipped).
    """
    from dpcore.evaluate import Task, _task_seed

    spec = get(key)
    lower, upper = data.target_bounds
    rows = []
    for rep in range(repetitions):
        folds = splits(data.y, data.task, protocol, seed + 1000 * rep)
        for eps in epsilons if spec.private else [float("nan")]:
            for fold, (train, test) in enumerate(folds):
                task = Task(key, float(eps), rep, fold)
                model = spec.make(
                    data.context(epsilon=eps if spec.private else 1.0, params=params, random_state=_task_seed(seed, task))
                )
                start = time.perf_counter()
                model.fit(data.X[train], data.y[train])
                seconds = time.perf_counter() - start
                predicted = model.predict(data.X[test])
                for suffix, guess, note in (
                    ("", predicted, ""),
                    ("+clip", np.clip(predicted, lower, upper), " (predictions clipped to target bounds)"),
                ):
                    rows.append(
                        {
                            "model": key + suffix,
                            "name": spec.name + note,
                            "kind": spec.kind,
                            "epsilon": eps,
                            "repetition": rep,
                            "fold": fold,
                            "metric": "MSE (normalised)",
                            "value": normalised_mse(data.y[test], guess, data.target_bounds),
                            "fit_seconds": seconds,
                        }
                    )
    return pd.DataFrame(rows)


def fit_and_score(
    key: str, train: Design, test: Design, epsilon: float, seed: int, params: dict | None = None
) -> tuple[float, float]:
    """Fit registry model ``key`` on ``train`` and return (accuracy or normalised MSE on ``test``, fit seconds)."""
    spec = get(key)
    model = seeded(spec.make(train.context(epsilon=epsilon if spec.private else 1.0, params=params, random_state=seed)), seed)
    start = time.perf_counter()
    model.fit(train.X, train.y)
    seconds = time.perf_counter() - start
    predicted = model.predict(test.X)
    if train.task == "classification":
        return float(np.mean(predicted == test.y)), seconds
    return normalised_mse(test.y, predicted, train.target_bounds), seconds


def seeded(model, seed: int):
    """Give every nested ``random_state`` the registry left unset (e.g. DP-EBM's) the seed, so benchmarks repeat.

    A fixed seed is fine for a benchmark and wrong for a real release; the registry leaves
    DP-EBM unseeded on purpose, and only this benchmark helper overrides it.
    """
    if hasattr(model, "get_params"):
        unset = {k: int(seed) for k, v in model.get_params(deep=True).items() if k.endswith("random_state") and v is None}
        if unset:
            model.set_params(**unset)
    return model


def normalised_mse(y_true, y_pred, target_bounds) -> float:
    """MSE on the target scaled to [0, 1] by its declared bounds (DiffPETs reports MSE this way)."""
    lower, upper = target_bounds
    span = float(upper) - float(lower)
    return float(np.mean(((np.asarray(y_true, float) - np.asarray(y_pred, float)) / span) ** 2))


# --- output ------------------------------------------------------------------------------


def fmt(value, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return "—"
    if isinstance(value, float | np.floating):
        return f"{value:.{digits}f}"
    return str(value)


def markdown_table(frame: pd.DataFrame, digits: int = 3) -> str:
    """A GitHub markdown table of ``frame`` (index ignored); floats to ``digits`` places."""
    header = "| " + " | ".join(str(c) for c in frame.columns) + " |"
    rule = "|" + "|".join("---" for _ in frame.columns) + "|"
    rows = ["| " + " | ".join(fmt(v, digits) for v in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join([header, rule, *rows])


class Report:
    """Collects printed markdown and writes results/<name>.md, .csv and .png."""

    def __init__(self, name: str):
        self.name = name
        self.lines: list[str] = []
        RESULTS.mkdir(parents=True, exist_ok=True)

    def say(self, text: str = "") -> None:
        print(text, flush=True)
        self.lines.append(text)

    def table(self, frame: pd.DataFrame, title: str | None = None, digits: int = 3) -> None:
        if title:
            self.say(f"### {title}")
            self.say()
        self.say(markdown_table(frame, digits))
        self.say()

    def save(self, results: pd.DataFrame, figure: plt.Figure | None = None) -> None:
        results.to_csv(RESULTS / f"{self.name}.csv", index=False)
        if figure is not None:
            figure.savefig(RESULTS / f"{self.name}.png", dpi=120, bbox_inches="tight")
            plt.close(figure)
        (RESULTS / f"{self.name}.md").write_text("\n".join(self.lines) + "\n", encoding="utf-8")
        print(f"wrote {RESULTS / self.name}.csv / .png / .md", flush=True)


def model_label(key: str) -> str:
    spec = get(key)
    return f"{spec.name} [{spec.kind}]"
