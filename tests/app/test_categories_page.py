"""The Data page's category sections through AppTest: discovery charged once, the (other) check, the accept button."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpstudio.support.session import STATE_KEY

SENTINEL = "SENTINEL-2828"


def _upload_wide(at, rows: int = 3000):
    """A table with two text columns whose lists are read from the data, one rare value planted."""
    rng = np.random.default_rng(28)
    frame = pd.DataFrame(
        {
            "x": rng.random(rows).round(3),
            "colour": rng.choice(["red", "green", "blue"], rows),
            "label": rng.choice(["yes", "no"], rows),
        }
    )
    frame.loc[7, "colour"] = SENTINEL
    at.radio(key="data_source").set_value("My own CSV file").run()
    at.file_uploader(key="upload").set_value(("wide.csv", frame.to_csv(index=False).encode("utf-8"), "text/csv")).run()
    return at


def _texts(at) -> str:
    return " ".join(
        str(e.value) for kind in ("error", "warning", "info", "success", "caption", "markdown") for e in getattr(at, kind)
    )


def test_one_click_discovers_every_text_list_and_charges_the_stated_cost(app):
    at = _upload_wide(app("data"))
    button = [b for b in at.button if b.label.startswith("Discover privately")][0]
    assert button.label == "Discover privately (spends ε = 0.2, δ = 1e-06)"  # two text columns at 0.1 each
    button.click().run()
    assert not at.exception
    state = at.session_state[STATE_KEY]
    schema = state.dataset.schema
    assert schema["colour"].categories == ["blue", "green", "red"] and not schema["colour"].bounds_from_data
    assert state.ledger().spent == pytest.approx(0.2) and len(state.ledger().spends()) == 1
    assert SENTINEL not in _texts(at)


def test_a_list_leaving_most_values_in_other_blocks_complete_until_accepted(app):
    at = _upload_wide(app("data"))
    state = at.session_state[STATE_KEY]
    schema = state.dataset.schema
    schema["label"].role = "target"
    schema["colour"].categories, schema["colour"].bounds_from_data = ["red", "purple"], False
    schema["label"].bounds_from_data = False
    state.dataset.base_schema = schema
    state.dataset.revision += 1
    at.run()
    assert any("Column 'colour'" in str(e.value) and "(other)" in str(e.value) for e in at.error)
    assert not any("The schema is complete" in str(s.value) for s in at.success)
    [b for b in at.button if b.label.startswith("Keep the list")][0].click().run()
    assert any("The schema is complete" in str(s.value) for s in at.success)
    assert SENTINEL not in _texts(at)


def test_where_values_may_change_the_button_says_what_the_ledger_books(app):
    """A replace-one dataset books an add/remove (ε, δ) as (2ε, (1 + e^ε)δ): the button says so before the click."""
    at = _upload_wide(app("data"))
    at.session_state[STATE_KEY].ledger().set_unit("replace-one", confirm=True)
    at.run()
    button = [b for b in at.button if b.label.startswith("Discover privately")][0]
    assert (
        button.label == "Discover privately (spends ε = 0.2, δ = 1e-06) (booked as ε = 0.4, δ = 2.22e-06 in this dataset's unit)"
    )
    button.click().run()
    assert at.session_state[STATE_KEY].ledger().spent == pytest.approx(0.4)
    download = [b for b in at.get("download_button") if b.proto.label == "Save this schema (JSON)"][0]
    assert "Owner's eyes only while 1 column(s)" in download.proto.help  # x's bounds are still read from the data


def test_bounds_typed_over_both_of_the_readings_bounds_are_the_owners_declaration():
    """Typed bounds untick *read from data* (its tick is off screen); one bound, categories or a new kind do not."""
    from dpcore.tables.schema import ColumnSpec, Schema
    from dpstudio.support.declaring import typed_over_the_reading

    def lat(lower, upper, kind="numeric"):
        categories = ["a"] if kind == "categorical" else []
        return ColumnSpec("lat", kind=kind, lower=lower, upper=upper, categories=categories, bounds_from_data=True)

    read = {"lat": (-45.9, -34.1)}
    town = ColumnSpec("town", kind="categorical", categories=["a", "b", "c"], bounds_from_data=True)
    assert typed_over_the_reading(read, Schema([lat(-90.0, 90.0), town])) == ["lat"]  # a typed list stays ticked
    assert typed_over_the_reading(read, Schema([lat(-90.0, -34.1)])) == []  # the upper bound is still the data's
    assert typed_over_the_reading(read, Schema([lat(90.0, -90.0)])) == []  # not a domain
    assert typed_over_the_reading(read, Schema([lat(None, None, "categorical")])) == []
    assert typed_over_the_reading({}, Schema([lat(-90.0, 90.0)])) == []  # no reading kept: nothing to compare


def test_a_schema_replaced_wholesale_starts_the_kept_readings_again(app):
    """A review: a schema uploaded with other bounds still marked as read from the data was compared with the first
    reading and unmarked as if typed. The kept readings belong to one revision of the declarations."""
    from dpstudio.support.session import STATE_KEY

    at = app("data")
    dataset = at.session_state[STATE_KEY].dataset

    def replaced_with(lower: float, upper: float) -> None:  # as an uploaded schema replaces them: a new revision
        for spec in dataset.schema.columns:
            if spec.kind == "numeric" and spec.role == "feature":
                spec.lower, spec.upper, spec.bounds_from_data = lower, upper, True
        dataset.base_schema = dataset.schema
        dataset.revision += 1
        at.run()
        assert not at.exception

    replaced_with(-5.0, 5.0)  # the reading kept: these bounds, marked as read from the data
    replaced_with(-1e9, 1e9)  # another schema, both bounds different, still marked: not typed by the owner
    numeric = [spec for spec in dataset.schema.columns if spec.kind == "numeric" and spec.role == "feature"]
    assert numeric and all(spec.bounds_from_data for spec in numeric)
    assert not [i for i in at.info if "The bounds you typed" in str(i.value)]
