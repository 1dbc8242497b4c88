"""Reading an owner's CSV: delimiters, encodings, guards, and error sentences that never quote the data."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import openpyxl
import pandas as pd
import pytest

from dpcore.exceptions import DataError
from dpcore.tables.loading import (
    MAX_COLUMNS,
    MAX_ROWS,
    decode,
    read_csv_bytes,
    read_csv_path,
    read_excel_bytes,
    read_table_bytes,
    sniff_delimiter,
)

TABLE = "name,age,city\nAnna,31,Oslo\nBo,45,Lund\nCleo,27,Graz\n"
# What every read of a plain headered file with decimal points adds to ``info``.
PLAIN = {"header": True, "header_guessed": True, "decimal": ".", "decimal_comma_suspected": False, "decimal_comma_columns": []}


# --- delimiters and encodings ------------------------------------------------------------------


@pytest.mark.parametrize(("delimiter", "name"), [(",", "comma"), (";", "semicolon"), ("\t", "tab")])
def test_each_delimiter_gives_the_same_table(delimiter, name):
    frame, info = read_csv_bytes(TABLE.replace(",", delimiter).encode("utf-8"))
    expected, _ = read_csv_bytes(TABLE.encode("utf-8"))
    pd.testing.assert_frame_equal(frame, expected)
    assert list(frame.columns) == ["name", "age", "city"]
    assert frame["age"].tolist() == [31, 45, 27]
    assert info == {"format": "csv", "encoding": "utf-8", "delimiter": name, "rows": 3, "columns": 3, **PLAIN}
    assert sniff_delimiter(TABLE.replace(",", delimiter)) == delimiter


def test_quoted_fields_keep_their_delimiters():
    frame, _ = read_csv_bytes(b'name,note\n"Smith, Anna","a; b"\nBo,plain\n')
    assert frame["name"].tolist() == ["Smith, Anna", "Bo"]
    assert frame["note"].tolist() == ["a; b", "plain"]


@pytest.mark.parametrize(
    ("raw", "encoding"),
    [
        ("navn,by\nJosé,München\nÅse,Tromsø\n".encode(), "utf-8"),
        (b"\xef\xbb\xbf" + "navn,by\nJosé,München\nÅse,Tromsø\n".encode(), "utf-8"),
        ("navn,by\nJosé,München\nÅse,Tromsø\n".encode("latin-1"), "latin-1"),
    ],
)
def test_utf8_with_or_without_bom_and_latin1(raw, encoding):
    frame, info = read_csv_bytes(raw)
    assert info["encoding"] == encoding
    assert list(frame.columns) == ["navn", "by"]  # no BOM glued to the first header
    assert frame["navn"].tolist() == ["José", "Åse"] and frame["by"].tolist() == ["München", "Tromsø"]


def test_missing_markers_and_whitespace():
    frame, _ = read_csv_bytes(b"a , b,c\n 1 ,?, x \nNA,2,  \nN/A,3,y\n")
    assert list(frame.columns) == ["a", "b", "c"]
    assert frame["b"].isna().tolist() == [True, False, False]
    assert frame["a"].isna().tolist() == [False, True, True]
    assert frame["c"].tolist()[0] == "x" and pd.isna(frame["c"].tolist()[1])


def test_blank_and_whitespace_lines_are_skipped():
    frame, info = read_csv_bytes(b"   \n\na,b\n\n1,2\n  \n3,4\n")
    assert list(frame.columns) == ["a", "b"] and frame.to_numpy().tolist() == [[1, 2], [3, 4]]
    assert info["rows"] == 2


def test_decode_reports_the_encoding():
    assert decode("é".encode()) == ("é", "utf-8")
    assert decode("é".encode("latin-1")) == ("é", "latin-1")


def test_california_sample_reads_from_disk(california_frame, california_info):
    assert california_info == {"format": "csv", "encoding": "utf-8", "delimiter": "comma", "rows": 20640, "columns": 10, **PLAIN}
    assert california_frame.shape == (20640, 10)


# --- bad files: a sentence, never a traceback or a cell value -----------------------------------

SENTINEL = "SENTINEL-9731"


def _xlsx_like() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("xl/sharedStrings.xml", f"<si><t>{SENTINEL}</t></si>\x00")
    return buffer.getvalue()


BAD_FILES = {
    "empty": (b"", "empty"),
    "only whitespace": (b"  \n\n\t\n", "empty"),
    "only a byte-order mark": (b"\xef\xbb\xbf", "empty"),
    "binary": (b"PK\x03\x04\x00\x00" + SENTINEL.encode() + b"\x00\x01\x02", "binary"),
    "spreadsheet archive": (_xlsx_like(), "binary"),
    "utf-16": ("name,secret\nAnna,SENTINEL-9731\n".encode("utf-16"), "binary"),
    "one column": (f"secret\n{SENTINEL}\nother\n".encode(), "Only one column"),
    "other delimiter": (f"name|secret\nAnna|{SENTINEL}\nBo|x\n".encode(), "Only one column"),
    "duplicate headers": (f"name,name,age\nAnna,{SENTINEL},3\nBo,x,4\n".encode(), "same name"),
    "duplicate headers after trimming": (f"name, name ,age\nAnna,{SENTINEL},3\n".encode(), "same name"),
    "header only": (b"name,secret\n", "no data rows"),
    "ragged rows": (f"name,secret\nAnna,{SENTINEL}\nBo,{SENTINEL},extra,fields\n".encode(), "different numbers of fields"),
    "trailing delimiters": (f"name,secret\nAnna,{SENTINEL},\nBo,x,\n".encode(), "different numbers of fields"),
    "unclosed quote": (f'name,secret\nAnna,"{SENTINEL}\nBo,x\n'.encode(), "different numbers of fields"),
}


@pytest.mark.parametrize("case", list(BAD_FILES))
def test_bad_files_raise_a_sentence_without_any_cell_value(case):
    raw, fragment = BAD_FILES[case]
    with pytest.raises(DataError) as caught:
        read_csv_bytes(raw)
    message = str(caught.value)
    assert fragment in message
    assert SENTINEL not in message and "Traceback" not in message
    assert message[0].isupper() and message.rstrip().endswith(".")
    assert isinstance(caught.value, ValueError)  # DataError is also a ValueError for callers that catch that


def test_row_guard(sentinel):
    rows = "".join(f"{i},{sentinel}\n" for i in range(6))
    with pytest.raises(DataError, match="more than 5 rows") as caught:
        read_csv_bytes(f"n,secret\n{rows}".encode(), max_rows=5)
    assert sentinel not in str(caught.value)
    frame, _ = read_csv_bytes(f"n,secret\n{rows}".encode(), max_rows=6)
    assert len(frame) == 6


def test_column_guard(sentinel):
    header = ",".join(f"c{i}" for i in range(4))
    with pytest.raises(DataError, match="more than 3 columns") as caught:
        read_csv_bytes(f"{header}\n1,2,3,{sentinel}\n".encode(), max_columns=3)
    assert sentinel not in str(caught.value)
    assert read_csv_bytes(f"{header}\n1,2,3,4\n".encode(), max_columns=4)[1]["columns"] == 4


def test_default_guards_are_generous_but_finite():
    assert 100_000 <= MAX_ROWS <= 10_000_000
    assert 50 <= MAX_COLUMNS <= 5_000


def test_a_missing_path_is_a_data_error(tmp_path):
    with pytest.raises(DataError, match="could not be opened"):
        read_csv_path(tmp_path / "nowhere.csv")


def test_read_csv_path_applies_the_same_checks(tmp_path, sentinel):
    path = tmp_path / "one_column.csv"
    path.write_bytes(f"secret\n{sentinel}\n".encode())
    with pytest.raises(DataError, match="Only one column") as caught:
        read_csv_path(path)
    assert sentinel not in str(caught.value)
    path.write_text("a;b\n1;2\n", encoding="utf-8")
    frame, info = read_csv_path(path)
    assert info["delimiter"] == "semicolon" and frame.shape == (1, 2)


# --- header detection ----------------------------------------------------------------------------

SHARED = Path("/work/shared/data")
SAMPLE_DATA = Path(__file__).resolve().parents[2] / "sample_data"
needs_shared = pytest.mark.skipif(not SHARED.is_dir(), reason="the shared data sets are not on this machine")


@needs_shared
def test_adult_data_is_detected_headerless():
    frame, info = read_table_bytes((SHARED / "adult" / "adult.data").read_bytes(), "adult.data")
    assert info["header"] is False and info["header_guessed"] is True
    assert list(frame.columns) == [f"column {i}" for i in range(1, 16)]
    assert frame.shape == (32561, 15)  # the first person is a row, not the column names
    assert frame["column 1"].iloc[0] == 39 and frame["column 15"].iloc[0] == "<=50K"
    assert frame["column 2"].isna().sum() == 1836  # "?" is missing, after the space that follows each comma


@needs_shared
@pytest.mark.parametrize(
    "path",
    sorted(str(p) for p in SHARED.glob("*/*.csv")) + sorted(str(p) for p in SAMPLE_DATA.glob("*.csv")),
)
def test_headered_files_are_not_flagged(path):
    frame, info = read_csv_path(path)
    assert info["header"] is True and info["header_guessed"] is True
    assert not any(name.startswith("column ") for name in frame.columns)
    assert info["decimal_comma_suspected"] is False


@needs_shared
@pytest.mark.parametrize(
    "name", ["california_housing/cal_housing.data", "mushroom/agaricus-lepiota.data", "nursery/nursery.data"]
)
def test_other_headerless_uci_files(name):
    frame, info = read_csv_path(SHARED / name)
    assert info["header"] is False and frame.columns[0] == "column 1"


@pytest.mark.parametrize(
    ("text", "header"),
    [
        ("name,age,city\nAnna,31,Oslo\nBo,45,Lund\n", True),  # "age" is no number above numbers
        ("country,2019,2020\nNorway,5,6\nSweden,7,8\n", True),  # number-like names, but "country" is a name
        ("Anna,31,Oslo\nBo,45,Lund\n", True),  # unique text: no sign either way, so the old reading
        ("1.5,2\n3.5,4\n5.5,6\n", False),  # numbers above numbers
        ("red,small,1\nblue,small,2\nred,large,3\n", False),  # categories that recur below
        ("colour,size,n\nred,small,1\nblue,small,2\nred,large,3\n", True),
    ],
)
def test_header_guess(text, header):
    frame, info = read_csv_bytes(text.encode())
    assert info["header"] is header and info["header_guessed"] is True
    assert len(frame) == text.count("\n") - header


def test_header_can_be_forced_either_way():
    frame, info = read_csv_bytes(TABLE.encode(), header=False)
    assert list(frame.columns) == ["column 1", "column 2", "column 3"] and len(frame) == 4
    assert info["header"] is False and info["header_guessed"] is False
    frame, info = read_csv_bytes(b"1,2\n3,4\n", header=True)
    assert list(frame.columns) == ["1", "2"] and info["header_guessed"] is False
    with pytest.raises(ValueError):
        read_csv_bytes(TABLE.encode(), header="yes")


# --- decimal commas and thousands separators ---------------------------------------------------

EUROPEAN = "Name;Preis;Menge;Gewicht\nA;1,5;3;1.234,5\nB;-2;4;2 345,25\nC;;5;12\nD;0,25;6;1\u00a0000\n"


def test_decimal_commas_are_suspected_and_kept_as_text():
    frame, info = read_csv_bytes(EUROPEAN.encode())
    assert info["decimal_comma_suspected"] is True and info["decimal_comma_columns"] == ["Preis", "Gewicht"]
    assert info["decimal"] == "."
    assert not pd.api.types.is_numeric_dtype(frame["Preis"]) and frame["Menge"].tolist() == [3, 4, 5, 6]


def test_decimal_comma_converts_with_thousands_separators():
    frame, info = read_csv_bytes(EUROPEAN.encode(), decimal=",")
    assert info["decimal"] == "," and info["decimal_comma_suspected"] is False
    assert info["decimal_comma_columns"] == ["Preis", "Gewicht"]
    assert frame["Preis"].tolist()[:2] == [1.5, -2.0] and pd.isna(frame["Preis"][2]) and frame["Preis"][3] == 0.25
    assert frame["Gewicht"].tolist() == [1234.5, 2345.25, 12.0, 1000.0]
    assert frame["Name"].tolist() == ["A", "B", "C", "D"]


def test_decimal_point_keeps_todays_reading_and_tab_files_are_checked_too():
    frame, info = read_csv_bytes(EUROPEAN.encode(), decimal=".")
    assert info["decimal_comma_suspected"] is False and info["decimal_comma_columns"] == []
    assert frame["Gewicht"].tolist()[0] == "1.234,5"
    _, info = read_csv_bytes(EUROPEAN.replace(";", "\t").encode())
    assert info["decimal_comma_columns"] == ["Preis", "Gewicht"]


def test_only_columns_that_fully_parse_are_converted(sentinel):
    frame, info = read_csv_bytes(f"a;b;c\n1,5;x;1,5\n2,5;y;{sentinel}\n".encode(), decimal=",")
    assert frame["a"].tolist() == [1.5, 2.5] and info["decimal_comma_columns"] == ["a"]
    assert frame["c"].tolist() == ["1,5", sentinel]


def test_comma_files_are_not_suspected_and_dates_are_not_numbers():
    _, info = read_csv_bytes(b'a,b\n"1,5",2\n"2,5",3\n')
    assert info["decimal_comma_suspected"] is False  # a comma delimiter makes a decimal comma unlikely
    frame, info = read_csv_bytes(b"when;n\n12.03.2020;1,5\n13.03.2020;2\n")
    assert info["decimal_comma_columns"] == ["n"] and frame["when"].dtype != float


# --- Excel -------------------------------------------------------------------------------------


def _workbook(rows, *, sheets=("Data",)) -> bytes:
    book = openpyxl.Workbook()
    book.active.title = sheets[0]
    for row in rows:
        book.active.append(row)
    for name in sheets[1:]:
        book.create_sheet(name).append(["other", "sheet"])
    buffer = io.BytesIO()
    book.save(buffer)
    return buffer.getvalue()


def test_xlsx_round_trip(tmp_path):
    path = tmp_path / "people.xlsx"
    path.write_bytes(_workbook([["name", "age", "income"], ["Anna", 31, 1.5], [" Bo ", 45, None]], sheets=("People", "Notes")))
    frame, info = read_table_bytes(path.read_bytes(), path.name)
    assert list(frame.columns) == ["name", "age", "income"]
    assert frame["name"].tolist() == ["Anna", "Bo"] and frame["age"].tolist() == [31, 45]
    assert pd.api.types.is_integer_dtype(frame["age"]) and pd.api.types.is_float_dtype(frame["income"])
    assert info["format"] == "xlsx" and info["sheet"] == "People" and info["sheets"] == 2
    assert info["header"] is True and info["header_guessed"] is True and info["rows"] == 2 and info["columns"] == 3


def test_xlsx_markers_are_missing_and_numbers_among_text_are_kept():
    raw = _workbook([["city", "age", "note"], ["Oslo", "?", 7], [" NA ", 45, " x "], ["Lund", 30, "y"]])
    frame, _ = read_excel_bytes(raw)
    assert frame["age"].isna().tolist() == [True, False, False] and pd.api.types.is_numeric_dtype(frame["age"])
    assert frame["city"].isna().tolist() == [False, True, False]
    assert frame["note"].tolist() == [7, "x", "y"]


def test_xlsx_header_detection_and_decimal_commas():
    raw = _workbook([["red", 1, "1,5"], ["blue", 2, "2,5"], ["red", 3, "1.000,5"]])
    frame, info = read_excel_bytes(raw)
    assert info["header"] is False and list(frame.columns) == ["column 1", "column 2", "column 3"] and len(frame) == 3
    assert info["decimal_comma_columns"] == ["column 3"]
    frame, _ = read_excel_bytes(raw, decimal=",")
    assert frame["column 3"].tolist() == [1.5, 2.5, 1000.5]


def test_xlsx_guards(sentinel):
    many = _workbook([["a", "b"]] + [[i, sentinel] for i in range(6)])
    with pytest.raises(DataError, match="more than 5 rows") as caught:
        read_excel_bytes(many, max_rows=5)
    assert sentinel not in str(caught.value)
    for rows, fragment in [
        ([["a", "a"], [1, sentinel]], "same name"),
        ([["a", "b"]], "no data rows"),
        ([["only"], [sentinel]], "Only one column"),
        ([], "empty"),
    ]:
        with pytest.raises(DataError, match=fragment) as caught:
            read_excel_bytes(_workbook(rows))
        assert sentinel not in str(caught.value)


XLS_HEADER = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"


@pytest.mark.parametrize(
    ("raw", "filename", "fragment"),
    [
        (XLS_HEADER + b"\x00" * 64 + SENTINEL.encode(), "old.xls", "save it as .xlsx or CSV"),
        (XLS_HEADER + b"\x00" * 64 + SENTINEL.encode(), "renamed.xlsx", "save it as .xlsx or CSV"),
        (XLS_HEADER + "EncryptionInfo".encode("utf-16-le") + SENTINEL.encode(), "secret.xlsx", "password"),
        (b"PK\x03\x04" + SENTINEL.encode() * 10, "broken.xlsx", "could not be read"),
        (_xlsx_like(), "broken.xlsx", "could not be read"),
        (SENTINEL.encode(), "text.xlsx", "not an .xlsx workbook"),
        (b"", "empty.xlsx", "empty"),
        (b"a,b\n1,2\n", "table.ods", "OpenDocument"),
        (b"a,b\n1,2\n", "table.zip", "Unpack it"),
        (b"a,b\n1,2\n" + SENTINEL.encode(), "table.parquet", "not a readable Parquet file"),
    ],
)
def test_refused_and_broken_workbooks_get_a_sentence(raw, filename, fragment):
    with pytest.raises(DataError) as caught:
        read_table_bytes(raw, filename)
    message = str(caught.value)
    assert fragment in message and SENTINEL not in message
    assert message[0].isupper() and message.rstrip().endswith(".")


def test_parquet_uploads_are_read_with_their_names_and_types():
    buffer = io.BytesIO()
    pd.DataFrame({"age": [31, 45, 27] * 10, "city": ["Hanoi", "Hue", "Vinh"] * 10}).to_parquet(buffer)
    frame, info = read_table_bytes(buffer.getvalue(), "warehouse_export.parquet")
    assert info["format"] == "parquet" and list(frame.columns) == ["age", "city"] and len(frame) == 30
    assert frame["age"].dtype.kind == "i"
    with pytest.raises(DataError, match="more than"):
        read_table_bytes(buffer.getvalue(), "warehouse_export.parquet", max_rows=10)


@pytest.mark.parametrize("filename", ["t.csv", "t.TSV", "t.txt", "t.data", "t.test", "no_extension"])
def test_textual_extensions_read_as_csv(filename):
    frame, info = read_table_bytes(TABLE.encode(), filename)
    assert info["format"] == "csv" and list(frame.columns) == ["name", "age", "city"]


def test_sentinel_never_appears_in_messages_of_the_new_readers(sentinel):
    cases = [
        (f"{sentinel},{sentinel}\n1,2\n", {"header": True}),  # duplicate names
        (f"a;b\n{sentinel};1,5\n{sentinel};x;y\n", {"decimal": ","}),  # ragged
        (f"{sentinel}\n{sentinel}\n", {"header": False}),  # one column
    ]
    for text, options in cases:
        with pytest.raises(DataError) as caught:
            read_table_bytes(text.encode(), "upload.csv", **options)
        assert sentinel not in str(caught.value)


def test_zero_padded_codes_stay_text_and_other_numbers_stay_numbers():
    raw = b"zone,count,price\n020,1,10.5\n060,2,11\n,3,12\n120,4,13\n"
    frame, _ = read_csv_bytes(raw)
    assert frame["zone"].tolist()[:2] == ["020", "060"] and frame["zone"].isna().sum() == 1
    assert pd.api.types.is_integer_dtype(frame["count"]) and pd.api.types.is_float_dtype(frame["price"])


def test_a_true_false_column_with_a_gap_is_read_not_refused():
    """A sensor log's alarm column, True/False with a blank: the whole file was "unreadable" (stripping text crashed)."""
    frame, _info = read_csv_bytes(b"a,alarm,b\n1,True,x\n2,,y\n3,False,z\n4,True,x\n")
    assert frame["alarm"].tolist()[0] is True and pd.isna(frame["alarm"][1]) and frame["b"].tolist() == ["x", "y", "z", "x"]
