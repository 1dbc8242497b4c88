"""The one typed object that holds a user's session (kept under one ``st.session_state`` key)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from dpcore.budget.accountant import ANALYST, OWNER, BudgetLedger
from dpcore.budget.datasets import Catalog, Identification
from dpcore.budget.signed_in import SignedIn
from dpcore.exceptions import DataError
from dpcore.i18n import N_, _
from dpcore.tables.loading import read_csv_path
from dpcore.tables.schema import Schema, load_schema, suggest_schema

if TYPE_CHECKING:  # the engine's training (scikit-learn and every model) loads with the Train page, not the first
    from dpcore.training import TrainedModel
from dpcore.tables.design import DEFAULT_COUNT_NOISE, DEFAULT_SELECTION


def _sample_folder() -> Path:
    """The bundled tables: ``sample_data/`` of a checkout, or the copy installed inside the package."""
    checkout = Path(__file__).resolve().parents[2] / "sample_data"
    return checkout if checkout.is_dir() else Path(__file__).resolve().parents[1] / "sample_data"


SAMPLE_DATA = _sample_folder()
# The names are keys (kept in the ledger and workspaces); the Data page shows them translated.
SAMPLES = {
    N_("California housing (sample)"): ("california_housing.csv", "california_housing.schema.json"),
    N_("Adult census income (sample)"): ("adult.csv", "adult.schema.json"),
}
DEFAULT_SAMPLE = "California housing (sample)"


def table_name(name: str) -> str:
    """A table or dataset name as shown: a bundled sample's name in the reader's language, any other as given."""
    return _(name) if name in SAMPLES else name


@dataclass(frozen=True)
class CarriedDeclarations:
    """The owner's earlier declarations carried over to a table just opened: which columns, which of those had a domain
    read from the data (read again from this table), and the table's own reading."""

    columns: list[str]
    read_again: list[str]
    read: Schema


@dataclass
class Dataset:
    """A loaded table and the owner's declarations about it."""

    name: str
    frame: pd.DataFrame
    info: dict
    base_schema: Schema
    schema: Schema
    identification: Identification
    is_sample: bool = False
    revision: int = 0  # bumped when the declarations are replaced wholesale (an uploaded schema)
    carried: CarriedDeclarations | None = None  # earlier declarations carried to it when it was opened (Data page says so)
    #: Each number column's bounds as read from the data, kept the first time the Data page sees them marked: typing
    #: over both is what makes them the owner's declaration (declaring.take_typed_bounds).
    read_domains: dict = field(default_factory=dict)
    read_domains_revision: int = -1  # the revision they were kept at: declarations replaced wholesale start them again

    @property
    def dataset_id(self) -> str:
        """The dataset (the people) whose budget this table spends."""
        return self.identification.dataset.dataset_id

    @property
    def fingerprint(self) -> str:
        """A key for this table's widgets and cached results: its dataset and its contents."""
        return f"{self.dataset_id}-{id(self.frame):x}"

    @property
    def schema_key(self) -> str:
        return hashlib.sha256(self.schema.to_json().encode("utf-8")).hexdigest()[:12]

    @property
    def declared_key(self) -> str:
        """The dataset and its declarations: a kept group map or attack belongs to the table with this key."""
        return f"{self.dataset_id}-{self.schema_key}"


@dataclass
class StudioState:
    dataset: Dataset | None = None
    ledger_path: str | None = None
    workspace: str = ""  # the token of the on-disk workspace (dpstudio.support.workspace)
    count_noise: str = DEFAULT_COUNT_NOISE
    selection: str = DEFAULT_SELECTION
    trained: TrainedModel | None = None
    compare_cache: dict = field(default_factory=dict)
    compare_settings: object | None = None  # the SweepSettings of the comparison on screen
    compare_pending: bool = False  # a preset asked for a run on the next page load
    upload_error: str | None = None
    refused_upload: tuple | None = (
        None  # (name, bytes, schema bytes) of an upload refused for its people: it may be made separate
    )
    refused_database: object | None = None  # the SqlSource of a database table refused for its people: it may be made separate
    loaded_upload_id: str | None = None
    loaded_schema_id: str | None = None
    upload: tuple | None = None  # (name, bytes, schema bytes, reading options) of the last upload, to read it again
    best_model: dict = field(default_factory=dict)
    release: object | None = None
    made_copy: str | None = None  # the settings of the synthetic copy in ``release`` (synthetic_view.settings_key)
    typed_declarations: list = field(default_factory=list)  # columns whose typed domain just replaced the reading's
    released_plans: dict = field(default_factory=dict)  # (dataset, declarations, unit) → the plan of the copy given out
    releases: list | None = None  # (dataset id, ModelStep | CopyStep): each model and copy, in order (recipe_view)
    # trained, releases, groups and attacks are also kept in the workspace: session.remember_result / recall_result.
    groups: object | None = None  # the Groups page's paid-for map (dpstudio.support.groups_view.GroupsResult)
    attacks: object | None = None  # the Attack page's results (dpstudio.support.attack_view.AttackResults)
    worked_in: str | None = None  # a workspace the owner changed or paid in, so worth reopening (earlier_work)
    noted_in_browser: str | None = None  # the workspace this browser was last asked to remember (earlier_work)
    utility_previews: dict = field(default_factory=dict)  # the Export page's owner-only previews, by plan and ε
    compared_copy: tuple | None = None  # (the analyst's synthetic copy, it as the Dataset their Compare page trains on)
    copy_comparison: tuple | None = None  # (the synthetic copy, its CopyComparison): the owner-only look beside the table
    bounds_verdict: tuple | None = None  # (table fingerprint, DataFrame): the owner-only fit of the bounds just estimated
    refusals: dict = field(default_factory=dict)  # a button's budget refusal, said on the page drawn after it (session)
    signed_in: SignedIn | None = None  # who acts, recorded with every spend (None: sign-in is not configured)
    role: str = OWNER  # OWNER, or ANALYST: the session opened a table shared with the signed-in analyst (support/roles.py)

    @property
    def analyst(self) -> bool:
        """Whether this session is an analyst's: no page may show it a row, an exact count or an owner-only figure."""
        return self.role == ANALYST

    @property
    def owner(self) -> str:
        """Whose workspaces this session opens: the signed-in subject, empty without sign-in."""
        return self.signed_in.subject if self.signed_in is not None else ""

    def catalog(self) -> Catalog:
        return Catalog(self.ledger_path, signed_in=self.signed_in)

    def ledger(self) -> BudgetLedger:
        """The budget of the dataset in use."""
        return self.catalog().ledger(self.dataset.dataset_id)


def load_sample(name: str, catalog: Catalog) -> Dataset:
    csv_name, schema_name = SAMPLES[name]
    frame, info = read_csv_path(SAMPLE_DATA / csv_name)
    schema = load_schema(SAMPLE_DATA / schema_name)
    found = catalog.open_table(lambda: [frame], name) if catalog.signed_in is None else own_sample(catalog, name)
    return Dataset(name, frame, info, schema, schema, found, is_sample=True)


def own_sample(catalog: Catalog, name: str) -> Identification:
    """The signed-in person's own dataset for a bundled sample: each person owns the sample they try.

    The sample's rows are bundled and public, so one person's sample is not another's people: it is
    not matched by its rows (which would hand the second person the first one's dataset, its history
    and its analysts), and it records no version, so a table someone uploads is never attached to it.
    """
    person = catalog.signed_in
    assert person is not None
    label = f"{name} · {hashlib.sha256(person.subject.encode('utf-8')).hexdigest()[:8]}"
    for known in catalog.datasets():
        if known.name.startswith(label) and catalog.ledger(known).role() == OWNER:
            return Identification(known, created=False, overlap=1.0)
    return Identification(catalog.create(catalog._unique_name(label)), created=True)


def dataset_from_upload(
    name: str,
    frame: pd.DataFrame,
    info: dict,
    catalog: Catalog,
    schema: Schema | None = None,
    dataset: str | None = None,
    separate: tuple[str, str] | None = None,
) -> Dataset:
    """An uploaded table, attached to the known dataset whose people it overlaps (or a new one, or ``dataset``).

    ``separate`` = (name, reason) makes it a separate dataset whatever it overlaps (recorded with the reason).
    """
    schema = schema or suggest_schema(frame)
    if separate is not None:
        found = catalog.separate(lambda: [frame], *separate)
    else:
        found = catalog.open_table(lambda: [frame], Path(name).stem, dataset=dataset)
    return Dataset(name, frame, info, schema, schema, found)


def separate_dataset(dataset: Dataset, catalog: Catalog, name: str, reason: str) -> None:
    """Make the table a dataset of its own although it overlaps a known one (recorded with the reason).

    Declarations carried from the other dataset's owner's work go: they were carried because the people were the same.
    """
    dataset.identification = catalog.separate(lambda: [dataset.frame], name, reason)
    if dataset.carried is not None:
        dataset.schema = dataset.base_schema = dataset.carried.read
        dataset.revision += 1
        dataset.carried = None


def apply_schema(dataset: Dataset, schema: Schema) -> None:
    """Use an uploaded schema for the table in use; its columns must be the table's."""
    missing = [c.name for c in schema.columns if c.name not in dataset.frame.columns]
    if missing or not schema.columns:
        raise DataError(
            _(
                "The schema file does not fit this table: it declares columns the table does not have "
                "({columns}). Upload the schema saved for this table."
            ).format(columns=", ".join(missing[:5]) or _("none at all"))
        )
    declared = {c.name for c in schema.columns}
    extra = [c for c in dataset.schema.columns if c.name not in declared]
    dataset.schema = dataset.base_schema = Schema([*schema.columns, *extra], schema.privacy_unit, schema.rows_per_person)
    dataset.revision += 1
