"""The person acting on a ledger, as the app's sign-in names them: a plain value, so the engine needs no web framework."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SignedIn:
    """Who spent, released or changed a dataset's budget, kept with that line of its history.

    Parameters
    ----------
    subject : str
        The identity provider's stable id for the person (OpenID Connect's ``sub`` claim).
    email : str
        Their e-mail address as the provider gave it, for a reader of the history; may be empty.
    """

    subject: str
    email: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.subject, str) or not self.subject.strip():
            raise ValueError("a signed-in person needs the provider's subject")
        if not isinstance(self.email, str):
            raise TypeError(f"email must be text, got {type(self.email).__name__}")
