"""Domain exceptions and warnings, in one place so callers can catch them by meaning."""


class DPCoreError(Exception):
    """Base class for errors that carry a sentence fit to show a user.

    Messages never contain a cell value of the private table: they name columns,
    parameters and counts only.
    """


class BudgetExceededError(DPCoreError):
    """A spend would take the privacy budget past its declared total; nothing was recorded."""


class DataError(DPCoreError, ValueError):
    """The table or its schema cannot be used as given; the message says what to do."""


class PrivacyLeakWarning(UserWarning):
    """Something about to be computed is not differentially private (e.g. bounds read from the data)."""


class UnitOfProtectionError(BudgetExceededError):
    """A release cannot be expressed in the dataset's unit of protection (e.g. a copy with an exact row count)."""


class BudgetRaiseError(BudgetExceededError):
    """A dataset's total would be raised without the owner's explicit confirmation; nothing changed."""
