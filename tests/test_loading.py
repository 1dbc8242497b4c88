"""Reading an owner's CSV: delimiters, encodings, guards, and error sentences that never quote the data."""

from __future__ import annotations

import io
import zipfile

import pandas as pd
import pytest

from dpcore.exceptions import DataError
from dpcore.loading import MAX_COLUMNS, MAX_ROWS, decode, read_csv_bytes, read_csv_path, sniff_delimiter

TABLE = "name,age,city\nAnna,31,Oslo\nBo,45,Lund\nCleo,27,Graz\n"


# --- delimiters and encodings ------------------------------------------------------------------


@pytest.mark.parametrize(("delimiter", "name"), [(",", "comma"), (";", "semicolon"), ("\t", "tab")])
def test_each_delimiter_gives_the_same_table(delimiter, name):
    frame, info = read_csv_bytes(TABLE.replace(",", delimiter).encode("utf-8"))
    expected, _ = read_csv_bytes(TABLE.encode("utf-8"))
    pd.testing.assert_frame_equal(frame, expected)
    assert list(frame.columns) == ["name", "age", "city"]
    assert frame["age"].tolist() == [31, 45, 27]
    assert info == {"encoding": "utf-8", "delimiter": name, "rows": 3, "columns": 3}
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
    assert california_info == {"encoding": "utf-8", "delimiter": "comma", "rows": 20640, "columns": 10}
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
