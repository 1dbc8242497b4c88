"""The person acting on a ledger, as the app's sign-in names them: a plain value, so the engine needs no web framework."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SignedIn:
    """Who spent, released or changed a dataset's budget, kept with that line of its history.

    Parameters
    ----------
    subject : str
        The person's stable id: with sign-in, ``"<issuer>|<sub>"`` (OpenID Connect's ``iss`` and
        ``sub`` claims, :func:`dpstudio.support.sign_in.signed_in_from_claims`), since a ``sub`` is
        unique only within its provider and several providers may be configured.
    email : str
        Their e-mail address as the provider gave it, for a reader of the history; may be empty.
    email_verified : bool
        Whether the provider vouched for the e-mail (its ``email_verified`` claim is ``true``).
        Only a verified e-mail matches a slice granted by e-mail (:mod:`dpcore.budget.slices`).
    """

    subject: str
    email: str = ""
    email_verified: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.subject, str) or not self.subject.strip():
            raise ValueError("a signed-in person needs the provider's subject")
        if not isinstance(self.email, str):
            raise TypeError(f"email must be text, got {type(self.email).__name__}")
