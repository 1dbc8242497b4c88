"""Column declarations, the suggested schema and its leak flags, and the normaliser."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpcore.exceptions import DataError
from dpcore.tables.categories import other_share_problems
from dpcore.tables.cell_shapes import in_natural_order
from dpcore.tables.schema import (
    MISSING_CATEGORY,
    OTHER_CATEGORY,
    ColumnSpec,
    Normaliser,
    Schema,
    category_codes,
    check_releasable,
    looks_like_identifier,
    normalise_numeric,
    out_of_bounds_share,
    suggest_schema,
    unique_per_row,
)

CATEGORIES = ["<1H OCEAN", "INLAND", "ISLAND", "NEAR BAY", "NEAR OCEAN"]


# --- the messy California Housing sample with its declared schema ------------------------------


def test_california_loads_with_its_schema(california_frame, california_schema, california_info):
    assert california_info["rows"] == 20640 and california_info["columns"] == 10
    assert california_frame["total_bedrooms"].isna().sum() == 207
    assert not pd.api.types.is_numeric_dtype(california_frame["ocean_proximity"])
    assert california_schema.problems(california_frame, need_target=True) == []
    california_schema.check(california_frame, need_target=True)
    assert california_schema.task == "regression"
    assert california_schema.target.name == "median_house_value"
    assert california_schema.leak_notes() == []
    assert california_schema["ocean_proximity"].categories == CATEGORIES


@pytest.mark.parametrize("encoding", ["ordinal", "onehot"])
def test_california_features_are_complete_and_in_bounds(california_frame, california_schema, encoding):
    normaliser = Normaliser(california_schema, encoding=encoding)
    scaled = normaliser.features(california_frame, scaled=True)
    raw = normaliser.features(california_frame)
    width = 8 + (len(CATEGORIES) + 2 if encoding == "onehot" else 1)
    assert scaled.shape == raw.shape == (20640, width) == (20640, len(normaliser.feature_names()))
    assert np.all(np.isfinite(scaled)) and np.all(np.isfinite(raw))
    assert scaled.min() >= 0.0 and scaled.max() <= 1.0
    lower, upper = normaliser.feature_bounds()
    assert np.all(raw >= lower) and np.all(raw <= upper)
    y, keep = normaliser.target(california_frame)
    assert keep.all() and y.min() >= 0 and y.max() <= 500001


def test_missing_bedrooms_are_filled_with_the_declared_value(california_frame, california_schema):
    spec = california_schema["total_bedrooms"]
    missing = california_frame["total_bedrooms"].isna().to_numpy()
    column = list(Normaliser(california_schema).feature_names()).index("total_bedrooms")
    raw = Normaliser(california_schema).features(california_frame)[:, column]
    assert spec.fill == 500.0
    np.testing.assert_allclose(raw[missing], 500.0)
    scaled = normalise_numeric(california_frame["total_bedrooms"], spec)
    np.testing.assert_allclose(scaled[missing], 500.0 / 6500.0)


def test_the_default_fill_is_the_middle_of_the_bounds():
    spec = ColumnSpec("x", lower=10.0, upper=20.0)
    assert spec.fill == 15.0
    np.testing.assert_allclose(normalise_numeric(pd.Series([np.nan, 10.0, 25.0, -5.0, np.inf]), spec), [0.5, 0.0, 1.0, 0.0, 1.0])


def test_unseen_and_missing_categories_map_to_other_and_missing(california_frame, california_schema):
    spec = california_schema["ocean_proximity"]
    assert spec.levels == [*CATEGORIES, MISSING_CATEGORY, OTHER_CATEGORY]
    frame = california_frame.head(4).copy()
    frame["ocean_proximity"] = ["INLAND", "MOON BASE", None, "near bay"]
    codes = category_codes(frame["ocean_proximity"], spec)
    assert [spec.levels[c] for c in codes] == ["INLAND", OTHER_CATEGORY, MISSING_CATEGORY, OTHER_CATEGORY]
    onehot = Normaliser(california_schema, encoding="onehot")
    names = onehot.feature_names()
    features = onehot.features(frame)
    assert features[1, names.index(f"ocean_proximity = {OTHER_CATEGORY}")] == 1.0
    assert features[2, names.index(f"ocean_proximity = {MISSING_CATEGORY}")] == 1.0
    assert features[:, [n.startswith("ocean_proximity") for n in names]].sum(axis=1).tolist() == [1.0] * 4
    share = out_of_bounds_share(frame, california_schema).set_index("column")
    assert share.loc["ocean_proximity", "outside the declared domain"] == 0.5


def test_classification_target_keeps_only_declared_labels(california_frame, california_schema):
    schema = Schema.from_json(california_schema.to_json())
    schema["ocean_proximity"].role = "target"
    schema["median_house_value"].role = "feature"
    frame = california_frame.head(3).copy()
    frame["ocean_proximity"] = ["INLAND", "MOON BASE", None]
    labels, keep = Normaliser(schema).target(frame)
    assert schema.task == "classification"
    assert keep.tolist() == [True, False, False] and labels.tolist() == ["INLAND"]


# --- suggest_schema: read from the data, and flagged as a leak ----------------------------------


def test_suggested_domains_are_flagged_as_leaks(california_frame):
    suggested = suggest_schema(california_frame)
    assert suggested.names == list(california_frame.columns)
    for spec in suggested.columns:
        assert spec.bounds_from_data, spec.name
    income = suggested["median_income"]
    assert (income.kind, income.lower, income.upper) == (
        "numeric",
        california_frame["median_income"].min(),
        california_frame["median_income"].max(),
    )
    assert suggested["ocean_proximity"].kind == "categorical"
    assert suggested["ocean_proximity"].categories == CATEGORIES
    notes = suggested.leak_notes()
    assert len(notes) == len(california_frame.columns)
    for name in california_frame.columns:
        assert any(f"'{name}'" in note and "Not differentially private" in note for note in notes), name


@pytest.mark.parametrize(
    "name",
    [
        "id",
        "ID",
        "email",
        "e-mail",
        "Email",
        "phone",
        "customer_id",
        "user id",
        "first_name",
        "Full Name",
        "zip",
        "ssn",
        "passport",
        "address",
    ],
)
def test_identifier_like_names_become_identifiers(name):
    frame = pd.DataFrame({name: ["a1", "b2", "c3"], "age": [30, 40, 50]})
    suggested = suggest_schema(frame)
    assert suggested[name].role == "identifier"
    assert suggested["age"].role == "feature"


def test_amounts_and_dates_written_as_text_are_ignored_with_the_way_out_that_fits_them():
    """A newcomer's export: money with a sign and thousands commas, percentages, dates. Declaring their hundreds of
    values as categories would be the wrong way out; the note says what to save instead, and quotes no cell."""
    rng = np.random.default_rng(0)
    rows = 400
    amounts = rng.lognormal(6, 1.5, rows)
    frame = pd.DataFrame(
        {
            "amount": [f"${value:,.2f}" for value in amounts],  # every row its own: a measurement, not a key
            "share": [f"{value:.1f}%" for value in rng.uniform(0, 100, rows)],
            "ordered": [f"2024-{m:02d}-{d:02d}" for m, d in zip(rng.integers(1, 13, rows), rng.integers(1, 29, rows))],
            "paid_at": [f"{2020 + i // 200}-01-01T{i % 24:02d}:{i % 60:02d}:00Z" for i in range(rows)],  # each its own
            "remark": [f"note {i % 180}" for i in range(rows)],
        }
    )
    suggested = suggest_schema(frame)
    for name in ("amount", "share"):
        assert suggested[name].role == "ignore", name
        assert "plain numbers" in suggested[name].source and "$" not in suggested[name].source
    for name in ("ordered", "paid_at"):
        assert suggested[name].role == "ignore" and "dates" in suggested[name].source, name
    assert "declare categories" in suggested["remark"].source
    assert unique_per_row(pd.Series([f"INV-{i:05d}" for i in range(rows)]))  # text keys stay keys
    assert not unique_per_row(frame["amount"])
    assert unique_per_row(pd.Series([f"{1000 + i:,}" for i in range(rows)]))  # whole numbers, grouped: still a key


def test_yes_no_columns_flags_and_answer_scales_are_read_as_a_person_would():
    """A walk-through's sensor log and staff survey: True/False became a number from 0 to 1 (and, as the target, a
    regression), a quality flag's codes were amounts, and "Agree" came before "Disagree"."""
    frame = pd.DataFrame(
        {
            "alarm": [True, False, False, False] * 10,
            "quality_flag": [0, 1, 2, 9] * 10,
            "valued": ["Agree", "Strongly disagree", "Neutral", "Disagree", "Strongly agree"] * 8,
            "discount": ["5%", "0%", "15%", "10%"] * 10,
            "band": ["$60,000-$80,000", "$100,000+", "$40,000-$60,000", "$80,000-$100,000"] * 10,
        }
    )
    schema = suggest_schema(frame)
    assert (schema["alarm"].kind, schema["alarm"].categories) == ("categorical", ["False", "True"])
    assert (category_codes(frame["alarm"], schema["alarm"])[:2] == [1, 0]).all()
    assert (schema["quality_flag"].kind, schema["quality_flag"].categories) == ("categorical", ["0", "1", "2", "9"])
    assert schema["valued"].categories == ["Strongly disagree", "Disagree", "Neutral", "Agree", "Strongly agree"]
    assert schema["discount"].categories == ["0%", "5%", "10%", "15%"]
    assert schema["band"].categories == ["$40,000-$60,000", "$60,000-$80,000", "$80,000-$100,000", "$100,000+"]
    assert in_natural_order(["b", "A", "c"]) == ["A", "b", "c"]  # otherwise as before: the alphabet


def test_a_scale_stated_in_the_header_is_declared_not_read_from_the_data():
    """A survey's "Overall satisfaction (1-10)": its scale is the form's, not a leak to estimate (which gave 1 to 20)."""
    frame = pd.DataFrame({"Overall satisfaction (1-10)": [2, 7, 9, 4] * 10, "Years at company": [0.5, 3.0, 12.5, 30.7] * 10})
    schema = suggest_schema(frame)
    stated = schema["Overall satisfaction (1-10)"]
    assert (stated.lower, stated.upper, stated.bounds_from_data) == (1.0, 10.0, False) and "its name" in stated.source
    assert schema["Years at company"].bounds_from_data  # no scale named: read from the data, a leak until declared


def test_a_small_tables_dates_and_prices_are_set_aside_not_listed_as_categories():
    """30 rows, each its own date and price: not 30 categories read from the data (a review found them so)."""
    frame = pd.DataFrame(
        {
            "born": [f"1990-01-{day:02d}" for day in range(1, 31)],
            "paid": [f"${10 + day}.50" for day in range(30)],
            "discount": ["5%", "10%", "0%"] * 10,  # few values: a category
            "flag": [True, None, False] * 10,  # True/False with gaps (the file read them so): two categories
        }
    )
    schema = suggest_schema(frame)
    assert schema["born"].role == "ignore" and "dates" in schema["born"].source and not schema["born"].categories
    assert schema["paid"].role == "ignore" and "plain numbers" in schema["paid"].source
    assert schema["discount"].categories == ["0%", "5%", "10%"]
    assert (schema["flag"].kind, schema["flag"].categories) == ("categorical", ["False", "True"])


def test_categories_that_differ_only_in_capitals_are_pointed_out():
    frame = pd.DataFrame({"channel": ["web", "Web", "store", "phone"] * 10, "plan": ["a", "b"] * 20})
    suggested = suggest_schema(frame)
    assert "differ only in capitals" in suggested["channel"].source
    assert "differ only" not in suggested["plan"].source


@pytest.mark.parametrize("name", ["valid", "humidity", "width", "paid", "ideal", "age", "zipper_count"])
def test_ordinary_names_stay_features(name):
    assert suggest_schema(pd.DataFrame({name: [1.0, 2.0]}))[name].role == "feature"


def test_identifier_values_are_never_copied_into_the_schema(sentinel):
    frame = pd.DataFrame(
        {
            "email": [f"{sentinel}-{i}@example.org" for i in range(80)],
            "phone": [f"+47 {sentinel} {i}" for i in range(80)],
            "x": [i % 40 for i in range(80)],
        }
    )
    suggested = suggest_schema(frame)
    assert suggested["email"].role == suggested["phone"].role == "identifier"
    assert suggested["email"].categories == []
    assert sentinel not in suggested.to_json()
    assert sentinel not in suggested.to_frame().to_csv()
    assert suggested.leak_notes() == ["Not differentially private: the bounds of 'x' were read from the data, not declared."]


def test_many_distinct_text_values_make_a_feature_ignored():
    frame = pd.DataFrame({"comment": [f"text {i % 55}" for i in range(110)], "y": [i % 7 for i in range(110)]})
    spec = suggest_schema(frame, max_categories=50)["comment"]
    assert spec.role == "ignore" and spec.categories == [] and "50" in spec.source


def test_a_constant_numeric_column_gets_a_non_empty_range():
    spec = suggest_schema(pd.DataFrame({"c": [3.0, 3.0, np.nan]}))["c"]
    assert (spec.lower, spec.upper) == (3.0, 4.0)
    assert spec.problems() == []


# --- problems, as sentences --------------------------------------------------------------------


def test_text_column_declared_numeric_is_a_problem_sentence(california_frame, california_schema, sentinel):
    frame = california_frame.head(50).copy()
    frame["median_income"] = frame["median_income"].astype(object)
    frame.loc[3, "median_income"] = sentinel
    problems = california_schema.problems(frame)
    assert problems == [
        "Column 'median_income' has text values but is declared numeric: declare it categorical, or fix the file."
    ]
    with pytest.raises(DataError) as caught:
        california_schema.check(frame)
    assert sentinel not in str(caught.value)


@pytest.mark.parametrize(("lower", "upper"), [(5.0, 5.0), (6.0, 5.0)])
def test_lower_not_below_upper_is_a_problem(lower, upper):
    problems = ColumnSpec("income", lower=lower, upper=upper).problems()
    assert problems == ["Column 'income': the lower bound must be below the upper bound."]


@pytest.mark.parametrize(
    ("spec", "fragment"),
    [
        (ColumnSpec("a", lower=None, upper=1.0), "declare a lower and an upper bound"),
        (ColumnSpec("a", lower=0.0, upper=float("inf")), "declare a lower and an upper bound"),
        (ColumnSpec("a", kind="categorical", categories=["only"]), "at least two categories"),
        (ColumnSpec("a", kind="categorical", categories=["x", "y", "x"]), "repeats"),
        (ColumnSpec("a", role="secret", lower=0.0, upper=1.0), "role must be one of"),
        (ColumnSpec("a", kind="text"), "kind must be numeric or categorical"),
    ],
)
def test_declaration_problems(spec, fragment):
    problems = spec.problems()
    assert problems and fragment in problems[0] and all(p.startswith("Column 'a': ") for p in problems)


def test_identifiers_and_ignored_columns_need_no_domain():
    assert ColumnSpec("email", role="identifier").problems() == []
    assert ColumnSpec("notes", role="ignore", kind="categorical").problems() == []


def test_schema_level_problems(california_schema, california_frame):
    two_targets = Schema.from_json(california_schema.to_json())
    two_targets["median_income"].role = "target"
    assert "Choose only one target column." in two_targets.problems()
    no_target = Schema([ColumnSpec("x", lower=0.0, upper=1.0)])
    assert "Choose a target column (the value the model should predict)." in no_target.problems(need_target=True)
    only_target = Schema([ColumnSpec("y", role="target", lower=0.0, upper=1.0)])
    assert "Choose at least one feature column." in only_target.problems(need_target=True)
    absent = Schema([ColumnSpec("not_there", lower=0.0, upper=1.0)])
    assert absent.problems(california_frame) == ["Column 'not_there' is declared but not in the table."]
    with pytest.raises(DataError, match="not in the table"):
        absent.check(california_frame)


# --- (de)serialisation and the editable table --------------------------------------------------


def test_json_round_trip(california_schema, california_frame):
    assert Schema.from_json(california_schema.to_json()) == california_schema
    suggested = suggest_schema(california_frame)
    again = Schema.from_json(suggested.to_json())
    assert again == suggested
    assert again.leak_notes() == suggested.leak_notes()


@pytest.mark.parametrize("text", ["{not json", "[]", '{"cols": []}', '{"columns": [{"role": "feature"}]}', '{"columns": 5}'])
def test_bad_schema_files_are_data_errors(text):
    with pytest.raises(DataError, match="schema file"):
        Schema.from_json(text)


def test_unknown_keys_in_a_schema_file_are_ignored():
    assert Schema.from_json('{"columns": [{"name": "a", "written_by": "a newer version"}]}').names == ["a"]


def test_the_leak_flag_is_cleared_only_by_the_owner(california_frame):
    suggested = suggest_schema(california_frame)
    table = suggested.to_frame()
    assert table["read from data (leak)"].all()
    edited = table.copy()
    row = edited.index[edited["column"] == "median_income"][0]
    edited.loc[row, ["lower", "upper"]] = [0.0, 15.0]  # nudged, but still flagged until the owner unticks it
    rebuilt = Schema.from_frame(edited)
    assert rebuilt["median_income"].bounds_from_data
    edited.loc[row, "read from data (leak)"] = False  # the owner confirms a public declaration
    rebuilt = Schema.from_frame(edited)
    assert not rebuilt["median_income"].bounds_from_data
    assert "'median_income'" not in " ".join(rebuilt.leak_notes())
    assert "'population'" in " ".join(rebuilt.leak_notes())


def test_from_frame_round_trips_a_declared_schema(california_schema):
    rebuilt = Schema.from_frame(california_schema.to_frame())
    for old, new in zip(california_schema.columns, rebuilt.columns):
        assert (new.name, new.role, new.kind, new.categories, new.source, new.public) == (
            old.name,
            old.role,
            old.kind,
            old.categories,
            old.source,
            old.public,
        )
        assert new.lower == old.lower and new.upper == old.upper and new.fill_value == old.fill_value
        assert not new.bounds_from_data


# --- identifiers in any case style, and columns unique per row (issue: a budget that is a promise) --


@pytest.mark.parametrize(
    "name", ["FullName", "PatientID", "EmailAddress", "patient_id", "e-mail", "Phone no", "SSN", "customer-number", "ZipCode"]
)
def test_identifier_names_in_any_case_style(name):
    assert looks_like_identifier(name)


@pytest.mark.parametrize("name", ["ocean_proximity", "education-num", "fnlwgt", "hours_per_week", "MedInc", "valid", "paid"])
def test_ordinary_names_are_not_identifiers(name):
    assert not looks_like_identifier(name)


def test_a_thirty_row_table_never_reads_names_or_id_ranges_into_the_schema(sentinel):
    """The issue's table: FullName became a category list of 30 names, PatientID bins from its min and max."""
    frame = pd.DataFrame(
        {
            "FullName": [f"{sentinel} person {i}" for i in range(30)],
            "PatientID": np.arange(1001, 1031),
            "Visit": [f"V{i}" for i in range(30)],
            "dose": np.tile([1.0, 2.0, 2.5], 10),
        }
    )
    schema = suggest_schema(frame)
    assert [schema[c].role for c in ("FullName", "PatientID", "Visit", "dose")] == ["identifier"] * 3 + ["feature"]
    assert schema["PatientID"].lower is None and schema["FullName"].categories == []
    assert sentinel not in schema.to_json()


def test_unique_fractional_measurements_stay_features():
    frame = pd.DataFrame({"weight": np.linspace(50.5, 99.7, 40), "label": ["a", "b"] * 20})
    assert suggest_schema(frame)["weight"].role == "feature"


def test_a_low_cardinality_text_column_named_like_an_identifier_is_a_category():
    """Issue 28: a road-surface column ``Street`` (Pave/Grvl) of a housing table is not an identifier."""
    rows = 200
    frame = pd.DataFrame(
        {
            "Street": ["Pave", "Grvl", "Pave", "Pave"] * (rows // 4),
            "Address": [f"{i} Main St" for i in range(rows)],
            "patient_id": [i % 50 for i in range(rows)],
            "SalePrice": range(rows),
        }
    )
    schema = suggest_schema(frame)
    assert schema["Street"].role == "feature" and schema["Street"].kind == "categorical"
    assert schema["Street"].categories == ["Grvl", "Pave"] and schema["Street"].bounds_from_data
    assert schema["Address"].role == schema["patient_id"].role == "identifier"
    assert suggest_schema(frame.head(12))["Street"].role == "identifier"  # too few rows to tell: the name decides


def test_codes_are_categories_not_numbers():
    frame = pd.DataFrame(
        {
            "zone": ["020", "060", "020", None] * 10,  # zero-padded digits: text codes
            "MSSubClass": [20, 60, 20, 190] * 10,  # whole numbers, header says "class"
            "room_count": [2, 6, 2, 9] * 10,  # whole numbers, a quantity
            "type_share": [0.2, 0.6, 0.2, 0.1] * 10,  # "type" but fractions
        }
    )
    schema = suggest_schema(frame)
    assert schema["zone"].kind == "categorical" and schema["zone"].categories == ["020", "060"]
    assert schema["MSSubClass"].kind == "categorical" and schema["MSSubClass"].categories == ["20", "60", "190"]
    assert schema["MSSubClass"].bounds_from_data  # the list was read from the data: a leak until declared
    assert schema["room_count"].kind == "numeric" and schema["type_share"].kind == "numeric"
    assert (category_codes(frame["MSSubClass"], schema["MSSubClass"]) < 3).all()


# --- categories matched by meaning, and the share left in "(other)" ------------------------------


def _class_read_as_floats() -> pd.DataFrame:
    """A class column with blanks, which pandas reads as floats: 0.0 … 4.0 and NaN."""
    classes = np.tile([0.0, 1.0, 2.0, 3.0, 4.0, np.nan], 20)
    return pd.DataFrame({"x": np.arange(classes.size, dtype=float), "label": classes})


def _class_schema(match_numbers: bool = True) -> Schema:
    return Schema(
        [
            ColumnSpec("x", lower=0, upper=200),
            ColumnSpec(
                "label", role="target", kind="categorical", categories=["0", "1", "2", "3", "4"], match_numbers=match_numbers
            ),
        ]
    )


def test_declared_numbers_match_cells_read_as_floats_in_models_and_copies():
    from dpcore.release.columns import category_codes as release_codes

    frame = _class_read_as_floats()
    spec = _class_schema()["label"]
    codes = category_codes(frame["label"], spec)
    assert (codes[frame["label"].notna().to_numpy()] < 5).all()
    assert (codes[frame["label"].isna().to_numpy()] == 5).all()
    y, keep = Normaliser(_class_schema()).target(frame)
    assert keep.sum() == 100 and set(y) == {"0", "1", "2", "3", "4"}
    released = release_codes(frame["label"], spec.categories, missing_code=-1)
    assert np.array_equal(np.where(codes == 5, -1, codes), released)


@pytest.mark.parametrize("spelling", ["0", "0.0", "00", 0, 0.0])
def test_every_spelling_of_a_number_is_one_category(spelling):
    spec = ColumnSpec("c", kind="categorical", categories=["0", "1"])
    assert category_codes(pd.Series([spelling], dtype=object), spec)[0] == 0


def test_unticking_match_numbers_compares_as_text_and_blocks_complete():
    frame = _class_read_as_floats()
    schema = _class_schema(match_numbers=False)
    assert (category_codes(frame["label"], schema["label"]) == 6).sum() == 100
    problems = schema.problems(frame, need_target=True) + other_share_problems(frame, schema)
    assert any("'label'" in p and "100%" in p and "left out of every model" in p for p in problems)


def test_the_other_share_check_names_the_column_never_a_value_and_accepting_silences_it(sentinel):
    from dpcore.tables.categories import matched_by_number

    frame = pd.DataFrame({"x": np.arange(40.0), "kind": ["a"] * 20 + [sentinel] * 20})
    schema = Schema([ColumnSpec("x", lower=0, upper=40), ColumnSpec("kind", kind="categorical", categories=["a", "b"])])
    problems = other_share_problems(frame, schema)
    assert len(problems) == 1 and "'kind'" in problems[0] and "50%" in problems[0] and sentinel not in problems[0]
    schema["kind"].accept_other = True
    assert other_share_problems(frame, schema) == []
    assert matched_by_number(frame, schema) == []
    assert matched_by_number(_class_read_as_floats(), _class_schema()) == ["label"]


def test_two_declared_spellings_of_one_number_are_a_problem_unless_compared_as_text():
    spec = ColumnSpec("c", kind="categorical", categories=["0", "00", "1"])
    assert any("same number" in p for p in spec.problems())
    spec.match_numbers = False
    assert spec.problems() == []


def test_match_numbers_and_accept_other_survive_the_json_round_trip_and_the_editor():
    schema = _class_schema(match_numbers=False)
    schema["label"].accept_other = True
    again = Schema.from_json(schema.to_json())
    assert again == schema
    assert Schema.from_frame(schema.to_frame())["label"].match_numbers is False


def test_a_train_test_column_is_ignored_not_a_feature():
    """Issue 28's newcomer: a split marker says which file a row came from; it is no evidence about a person."""
    frame = pd.DataFrame({"split": ["train", "test", "train", "TRAIN "] * 10, "kind": ["a", "b", "a", "c"] * 10})
    schema = suggest_schema(frame)
    assert schema["split"].role == "ignore" and "split" in schema["split"].source
    assert not schema["split"].categories and schema["kind"].role == "feature"


def test_the_domain_words_of_a_privacy_line_follow_the_declarations():
    schema = Schema(
        [
            ColumnSpec("age", lower=0, upper=120, source="estimated privately (ε = 0.05)"),
            ColumnSpec("income", lower=0, upper=9, source="estimated privately (ε = 0.05)"),
            ColumnSpec("zone", kind="categorical", categories=["a", "b"]),
            ColumnSpec("note", role="ignore", kind="categorical", categories=["x", "y"], bounds_from_data=True),
        ]
    )
    assert schema.read_from_data() == []  # an ignored column is used by nothing
    assert schema.domain_words(["age", "income", "zone"]) == (
        "Every bound and category it uses is declared, none read from the data: "
        "'age', 'income' — estimated privately (ε = 0.05); 'zone' — declared."
    )
    check_releasable(schema.read_from_data())
    schema["income"].bounds_from_data = True
    assert schema.domain_words(["age", "income"]) == "Not differentially private: the domain of 'income' was read from the data."
    with pytest.raises(DataError, match="Cannot leave this screen: the bounds or categories of 'income'"):
        check_releasable(schema.read_from_data())


@pytest.mark.parametrize(
    ("field", "value"),
    [("lower", "eighteen"), ("lower", True), ("public", "no"), ("name", 3), ("categories", "a|b"), ("upper", [1])],
)
def test_a_schema_file_with_a_field_of_the_wrong_kind_is_a_sentence_naming_it(field, value):
    column = {"name": "age", "kind": "numeric", "lower": 0, "upper": 120, field: value}
    with pytest.raises(DataError, match=f"'{field}' of the wrong kind"):
        Schema.from_dict({"columns": [column]})


def test_a_schema_file_reads_numbers_written_as_text_and_refuses_an_odd_unit():
    schema = Schema.from_dict({"columns": [{"name": "age", "lower": "18", "upper": 90}]})
    assert (schema["age"].lower, schema["age"].upper) == (18.0, 90) and not schema["age"].problems()
    for unit in ({"privacy_unit": 3}, {"privacy_unit": "age", "rows_per_person": "3"}, {"rows_per_person": True}):
        with pytest.raises(DataError, match="unit of protection"):
            Schema.from_dict({"columns": [{"name": "age", "lower": 0, "upper": 1}], **unit})
