"""The app on a team server's ledger that cannot be reached: one sentence, without the password, and no page."""

from __future__ import annotations


def test_an_unreachable_server_ledger_is_one_sentence_without_its_password(app, monkeypatch):
    monkeypatch.setenv("DPSTUDIO_LEDGER", "postgresql://owner:s3cret-pw@127.0.0.1:9/ledger?connect_timeout=2")
    at = app()
    assert not at.exception
    (error,) = at.error
    assert "could not be reached" in error.value and "owner:***@127.0.0.1:9" in error.value
    assert "s3cret" not in error.value
    assert not at.title  # no page drew on a ledger it cannot read
