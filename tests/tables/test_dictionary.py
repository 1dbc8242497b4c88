"""Data dictionaries in and out: the Frictionless Table Schema read by hand, and our own schema JSON."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from dpcore.exceptions import DataError
from dpcore.tables.categories import other_share_problems
from dpcore.tables.dictionary import (
    Dictionary,
    apply_dictionary,
    carry_declarations,
    frictionless_json,
    read_dictionary,
    to_frictionless,
)
from dpcore.tables.schema import ColumnSpec, Schema

FRICTIONLESS = {
    "fields": [
        {"name": "age", "type": "integer", "constraints": {"minimum": 0, "maximum": 120, "required": True}},
        {"name": "label", "type": "integer", "constraints": {"enum": [0, 1, 2, 3, 4]}},
        {"name": "smoker", "type": "boolean"},
        {"name": "note", "type": "string"},
        {"name": "record", "type": "string"},
        {"name": "elsewhere", "type": "number", "constraints": {"minimum": 1, "maximum": 2}},
    ],
    "primaryKey": "record",
    "missingValues": [""],
}


def _schema() -> Schema:
    return Schema(
        [
            ColumnSpec("age", lower=17, upper=90, bounds_from_data=True),
            ColumnSpec("label", role="target", lower=0, upper=4, bounds_from_data=True),
            ColumnSpec("smoker", kind="categorical", categories=["False", "True"], bounds_from_data=True),
            ColumnSpec("note", kind="categorical", categories=["a", "b"], bounds_from_data=True),
            ColumnSpec("record", kind="categorical"),
        ]
    )


def test_a_frictionless_schema_declares_bounds_lists_identifiers_in_one_step():
    dictionary = read_dictionary(json.dumps(FRICTIONLESS))
    assert isinstance(dictionary, Dictionary)
    schema, notes = apply_dictionary(_schema(), dictionary)
    age, label = schema["age"], schema["label"]
    assert (age.kind, age.lower, age.upper, age.may_be_missing, age.bounds_from_data) == ("numeric", 0.0, 120.0, False, False)
    assert (label.kind, label.categories, label.role) == ("categorical", ["0", "1", "2", "3", "4"], "target")
    assert schema["smoker"].categories == ["False", "True"] and not schema["smoker"].bounds_from_data
    assert schema["record"].role == "identifier"
    assert schema["note"].bounds_from_data  # no domain given: still the one read from the data
    assert any("'note'" in n for n in notes) and any("'elsewhere'" in n for n in notes)


def test_the_float_read_class_column_is_covered_once_the_dictionary_is_in():
    frame = pd.DataFrame({"age": [30.0] * 10, "label": [0.0, 1.0, 2.0, 3.0, None] * 2})
    schema, _notes = apply_dictionary(_schema(), read_dictionary(json.dumps(FRICTIONLESS)))
    assert other_share_problems(frame, Schema([schema["age"], schema["label"]])) == []


def test_export_then_import_gives_the_same_declarations_and_never_a_domain_read_from_the_data(sentinel):
    declared = Schema(
        [
            ColumnSpec("age", lower=0, upper=120, may_be_missing=False),
            ColumnSpec("label", role="target", kind="categorical", categories=["0", "1", "2"]),
            ColumnSpec("city", kind="categorical", categories=["Hanoi", sentinel], bounds_from_data=True),
            ColumnSpec("id", role="identifier", kind="categorical"),
        ]
    )
    text = frictionless_json(declared)
    assert sentinel not in text
    again, _notes = apply_dictionary(declared, read_dictionary(text))
    assert _declarations(again) == _declarations(declared)
    assert read_dictionary(declared.to_json()) == declared  # our own JSON, too
    fields = {f["name"]: f for f in to_frictionless(declared)["fields"]}
    assert fields["age"]["constraints"] == {"required": True, "minimum": 0, "maximum": 120}
    assert fields["label"]["constraints"] == {"enum": ["0", "1", "2"]}


def _declarations(schema: Schema) -> list[dict]:
    return [{k: v for k, v in column.items() if k != "source"} for column in schema.to_dict()["columns"]]


@pytest.mark.parametrize(
    ("fields", "fragment"),
    [
        ([{"type": "string"}], "Field 1"),
        ([{"name": "a", "type": "date"}], "'a'"),
        ([{"name": "a", "type": "number", "constraints": {"minimum": 5, "maximum": 1}}], "'a': the minimum"),
        ([{"name": "a", "type": "number", "constraints": {"minimum": 5}}], "'a': give both"),
        ([{"name": "a", "type": "string", "constraints": {"minimum": 1, "maximum": 2}}], "'a'"),
        ([{"name": "a", "constraints": {"enum": "x"}}], "'a': 'enum'"),
        ([{"name": "a", "constraints": {"enum": ["x", "x"]}}], "repeats"),
        ([{"name": "a"}, {"name": "a"}], "twice"),
    ],
)
def test_bad_dictionaries_are_sentences_naming_the_field(fields, fragment):
    with pytest.raises(DataError, match=fragment):
        read_dictionary(json.dumps({"fields": fields}))


@pytest.mark.parametrize("text", ["not json", "[]", '{"other": 1}'])
def test_files_of_another_shape_are_refused_in_words(text):
    with pytest.raises(DataError, match="JSON|neither"):
        read_dictionary(text)


def test_a_number_enum_matches_by_number_and_a_text_enum_keeps_the_owners_choice():
    schema = Schema(
        [
            ColumnSpec("label", kind="categorical", categories=["a", "b"], match_numbers=False),
            ColumnSpec("code", kind="categorical", categories=["a", "b"], match_numbers=False),
        ]
    )
    dictionary = read_dictionary(
        json.dumps(
            {
                "fields": [
                    {"name": "label", "type": "integer", "constraints": {"enum": [0, 1]}},
                    {"name": "code", "type": "string", "constraints": {"enum": ["01", "1"]}},
                ]
            }
        )
    )
    result, _notes = apply_dictionary(schema, dictionary)
    assert result["label"].match_numbers and not result["code"].match_numbers


def test_earlier_declarations_carry_over_but_never_a_domain_an_older_table_gave():
    earlier = _schema()
    earlier["age"].lower, earlier["age"].upper, earlier["age"].bounds_from_data = 18.0, 95.0, False  # paid for with ε
    earlier["age"].source = "estimated privately, ε = 0.1"
    earlier["label"].role, earlier["label"].may_be_missing = "feature", False  # the owner's word; its domain was read
    earlier["record"].role = "identifier"
    earlier.privacy_unit, earlier.rows_per_person = "record", 3
    read = _schema()
    read["label"].upper = 7  # this file's own reading
    read.columns.append(ColumnSpec("new", lower=0, upper=1, bounds_from_data=True))
    carried, names = carry_declarations(read, earlier)
    assert names == ["age", "label", "smoker", "note", "record"]
    assert (carried["age"].lower, carried["age"].upper, carried["age"].bounds_from_data) == (18.0, 95.0, False)
    assert carried["age"].source == "estimated privately, ε = 0.1"
    assert (carried["label"].role, carried["label"].may_be_missing) == ("feature", False)
    assert (carried["label"].upper, carried["label"].bounds_from_data) == (7, True)  # read again, still marked
    assert carried["new"] == read["new"] and (carried.privacy_unit, carried.rows_per_person) == ("record", 3)
    carried["age"].categories.append("x")
    assert earlier["age"].categories == []  # a copy, not the earlier declarations themselves
    without_unit = Schema([c for c in read.columns if c.name != "record"])
    assert carry_declarations(without_unit, earlier)[0].privacy_unit is None
