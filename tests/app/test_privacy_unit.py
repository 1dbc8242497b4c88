"""The Data page's privacy-unit question, and a model trained per person from it."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpstudio.support.data_view import SEVERAL_ROWS
from dpstudio.support.session import STATE_KEY


def _visits_csv(n_patients: int = 150, visits: int = 4) -> bytes:
    rng = np.random.default_rng(0)
    n = n_patients * visits
    frame = pd.DataFrame(
        {
            "patient": [f"P{i // visits:04d}" for i in range(n)],
            "age": rng.integers(20, 90, n),
            "dose": rng.integers(0, 50, n),
            "stay": rng.integers(1, 20, n),
        }
    )
    return frame.to_csv(index=False).encode()


def _declare(at, k: int):
    state = at.session_state[STATE_KEY]
    schema = state.dataset.schema
    for spec in schema.columns:  # public declarations, as an owner would type them
        spec.kind, spec.bounds_from_data = ("categorical", False) if spec.name == "patient" else ("numeric", False)
        if spec.name != "patient":
            spec.lower, spec.upper = 0.0, 120.0
    schema["stay"].role = "target"
    at.radio(key=f"several_rows_{state.dataset.fingerprint}").set_value(SEVERAL_ROWS[1]).run()
    key = state.dataset.fingerprint
    at.selectbox(key=f"unit_column_{key}").set_value("patient").run()
    at.number_input(key=f"rows_per_person_{key}").set_value(k).run()
    return at.session_state[STATE_KEY].dataset.schema


def test_the_owner_declares_whose_rows_and_the_model_is_charged_per_person(app):
    at = app("data")
    at.radio(key="data_source").set_value("My own CSV file").run()
    at.file_uploader(key="upload").set_value(("visits.csv", _visits_csv(), "text/csv")).run()
    schema = _declare(at, 2)
    assert (schema.privacy_unit, schema.rows_per_person) == ("patient", 2)
    assert schema["patient"].role == "identifier"
    caption = " ".join(str(c.value) for c in at.caption)
    assert "leaves out 300 of 600 rows" in caption and "P0001" not in caption
    assert not at.exception

    at.switch_page("pages/train.py").run()
    at.selectbox[0].set_value("dp_tree").run()
    at.text_input(key="train_epsilon").set_value("0.4").run()
    [b for b in at.button if b.label == "Train"][0].click().run()
    assert not at.exception, [e.value for e in at.exception]
    state = at.session_state[STATE_KEY]
    assert state.trained.model.epsilon == pytest.approx(0.2)
    [spend] = state.ledger().spends()
    assert spend.epsilon == pytest.approx(0.4) and "up to 2 rows each" in spend.label
    card = [m.value for m in at.markdown if "Model card" in str(m.value)][0]
    assert "counting up to 2 rows each" in card


def test_a_unit_column_without_values_is_said_in_words(app):
    at = app("data")
    at.radio(key="data_source").set_value("My own CSV file").run()
    at.file_uploader(key="upload").set_value(("visits.csv", b"patient,stay\n,3\n,4\n,5\n", "text/csv")).run()
    state = at.session_state[STATE_KEY]
    at.radio(key=f"several_rows_{state.dataset.fingerprint}").set_value(SEVERAL_ROWS[1]).run()
    at.selectbox(key=f"unit_column_{state.dataset.fingerprint}").set_value("patient").run()
    assert any("identifies each person is empty" in str(e.value) for e in at.error)
    assert not at.exception


def test_the_owner_sees_how_many_rows_a_copy_left_out_labelled_owner_only(app):
    at = app("data")
    at.radio(key="data_source").set_value("My own CSV file").run()
    at.file_uploader(key="upload").set_value(("visits.csv", _visits_csv(), "text/csv")).run()
    _declare(at, 2)
    at.switch_page("pages/export.py").run()
    _release(at)
    assert not at.exception, [e.value for e in at.exception]
    notes = [str(c.value) for c in at.caption if "left out of the copy" in str(c.value)]
    assert notes and "Owner only" in notes[0]


def _release(at):
    """Press the release button, typing the confirmation word first when the page asks for it (a copy that is mostly
    noise: the bundled samples' default copies at ε ≤ 1 are, so most releases here ask)."""
    if any(t.key == "noise_confirmation" for t in at.text_input):
        at.text_input(key="noise_confirmation").set_value("noise").run()
    [b for b in at.button if b.label == "Release the copy"][0].click().run()
