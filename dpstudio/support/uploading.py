"""Opening an owner's file on the Data page: read it, ask what the reader could only guess, read again."""

from __future__ import annotations

from dpcore.exceptions import DataError
from dpcore.i18n import N_, _, ngettext
from dpcore.tables.loading import read_table_bytes
from dpcore.tables.schema import Schema
from dpstudio.support.session import use_dataset
from dpstudio.support.state import StudioState, dataset_from_upload

UNREADABLE = N_("The file could not be read as a table. Save it as CSV or Excel (.xlsx) and try again.")


def open_upload(
    state: StudioState,
    name: str,
    raw: bytes,
    schema_json: bytes | None = None,
    dataset: str | None = None,
    separate: tuple[str, str] | None = None,
    **options,
) -> None:
    """Make the file the table in use, kept in the workspace (raises :class:`DataError` with a sentence; the old table stays then).

    ``separate`` = (name, reason): the owner's answer to a refusal, a dataset of its own (:meth:`Catalog.separate`).
    """
    try:
        frame, info = read_table_bytes(raw, name, **options)
        schema = Schema.from_json(schema_json.decode("utf-8", "replace")) if schema_json else None
    except DataError:
        raise
    except Exception:  # a reader's own message can quote cells: never show it
        raise DataError(_(UNREADABLE)) from None
    state.upload = (name, raw, schema_json, dict(options))
    use_dataset(
        state, dataset_from_upload(name, frame, info, state.catalog(), schema, dataset, separate), carry_earlier=schema is None
    )


def read_again(state: StudioState, **changes) -> None:
    """Read the last upload again with the owner's answer (``header=`` or ``decimal=``)."""
    name, raw, schema_json, options = state.upload
    # The same file read another way is the same people: it stays in the dataset it was opened as.
    open_upload(state, name, raw, schema_json, state.dataset.identification.dataset.name, **(options | changes))


#: The reader's delimiter names (its info keeps them in English), for the catalog.
DELIMITERS = {"comma": N_("comma"), "semicolon": N_("semicolon"), "tab": N_("tab"), "pipe": N_("pipe")}


def file_facts(info: dict) -> str:
    """How the file was read, in a few words."""
    if info.get("format") == "database":
        if info.get("table"):
            return _("table '{table}' of the database connection '{connection}'").format(
                table=info["table"], connection=info.get("connection", "")
            )
        return _("a query on the database connection '{connection}'").format(connection=info.get("connection", ""))
    if info.get("format") == "parquet":
        return _("Parquet file")
    if info.get("format") == "xlsx":
        sheets = info.get("sheets", 1)
        how = (
            _("Excel workbook, sheet '{sheet}' (the first of {count})") if sheets > 1 else _("Excel workbook, sheet '{sheet}'")
        ).format(sheet=info.get("sheet", ""), count=sheets)
    else:
        delimiter = info.get("delimiter", "comma")
        how = _("{delimiter}-separated, {encoding}").format(
            delimiter=_(DELIMITERS.get(delimiter, delimiter)), encoding=info.get("encoding", "utf-8")
        )
    if info.get("decimal") == ",":
        how += _(", decimal commas")
    return how + ("" if info.get("header", True) else _(", no header row (columns numbered)"))


def questions(info: dict) -> list[tuple[str, str, dict]]:
    """What to ask about a guess: ``(sentence, button label, read-again options)``."""
    out = []
    if info.get("header_guessed") and not info.get("header", True):
        out.append(
            (
                _(
                    "The first row looks like a person's record rather than column names, so it was kept as data and the "
                    "columns are numbered. If the first row does hold the column names, say so."
                ),
                _("The first row holds the column names"),
                {"header": True},
            )
        )
    if info.get("decimal_comma_suspected"):
        names = info.get("decimal_comma_columns", [])
        columns = ", ".join(f"'{c}'" for c in names[:8])
        sentence = ngettext(
            "The column {columns} looks like numbers written with a decimal comma (1,5 for one and a half), as many European "
            "and Vietnamese spreadsheets write them. For now it is read as text.",
            "The columns {columns} look like numbers written with a decimal comma (1,5 for one and a half), as many European "
            "and Vietnamese spreadsheets write them. For now they are read as text.",
            len(names),
        )
        out.append((sentence.format(columns=columns), _("Read them as numbers"), {"decimal": ","}))
    return out
