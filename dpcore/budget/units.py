"""Units of protection, the conversion between them, and how the ledger rounds amounts.

A dataset's **unit of protection** says which neighbouring tables its guarantee compares:

* ``"add/remove"`` — one person's row may be added or removed (unbounded DP; the models'
  own guarantee);
* ``"replace-one"`` — one person's values may change, the number of rows being public
  (bounded DP; what a randomized-response copy gives on its own).

A spend made under one relation is expressed in the dataset's unit by :func:`convert`:

* same relation: unchanged;
* add/remove → replace-one: replacing a row is removing it and adding another, so by group
  privacy over two steps an (ε, δ)-DP release is ``(2ε, (1 + e^ε)·δ)``-DP under replace-one
  (Kifer & Machanavajjhala 2011; Dwork & Roth 2014, Thm 2.2);
* replace-one → add/remove: no conversion exists (a release that publishes the exact row
  count separates add/remove neighbours with certainty), so it is refused with
  :class:`~dpcore.exceptions.UnitOfProtectionError`; a randomized copy meets add/remove only
  when padded to a noisy row count (:mod:`dpcore.release`).

Amounts are decimal. A spend is rounded *up* (ε to nine decimals, δ to six significant digits)
and a total *down*, so the books never promise more than the owner declared.
"""

from __future__ import annotations

from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal, localcontext

from dpcore.exceptions import UnitOfProtectionError
from dpcore.i18n import N_, _
from dpcore.validation import check_delta, check_epsilon

ADD_REMOVE = "add/remove"
REPLACE_ONE = "replace-one"
#: The sentence of each unit, in English (reports keep it as is); ``_(UNITS[unit])`` for a reader.
UNITS = {
    ADD_REMOVE: N_("one person's row may be added to or removed from the table"),
    REPLACE_ONE: N_("one person's values may change (the number of rows is public)"),
}


def check_unit(unit: str) -> str:
    if unit not in UNITS:
        raise ValueError(f"unit must be one of {', '.join(UNITS)}, got {unit!r}")
    return unit


def fmt(amount: Decimal | float | str) -> str:
    """A Decimal as plain text without trailing zeros (0.250000000 → 0.25; tiny δ in e-notation).

    Examples
    --------
    >>> fmt(Decimal("0.250000000")), fmt(Decimal("1e-10"))
    ('0.25', '1e-10')
    """
    amount = Decimal(amount)
    if amount != 0 and abs(amount) < Decimal("0.001"):
        return f"{float(amount):.3g}"
    text = format(amount, "f")
    return text.rstrip("0").rstrip(".") if "." in text else text


def delta_decimal(delta: Decimal | float, up: bool = True) -> Decimal:
    """δ to six significant digits, rounded up for a spend and down for a total (δ can be far below 1e-9)."""
    delta = Decimal(repr(float(check_delta(delta)))) if not isinstance(delta, Decimal) else delta
    if not delta:
        return Decimal(0)
    step = Decimal(1).scaleb(delta.adjusted() - 5)
    return delta.quantize(step, rounding=ROUND_CEILING if up else ROUND_FLOOR)


def total_decimal(total: float) -> Decimal:
    """A total ε rounded *down* to nine decimals: the promise is never larger than the owner declared."""
    return Decimal(repr(float(check_epsilon(total, "total_epsilon")))).quantize(Decimal("1e-9"), rounding=ROUND_FLOOR)


def convert(epsilon: Decimal, delta: Decimal, relation: str, unit: str) -> tuple[Decimal, Decimal]:
    """(ε, δ) of a spend made under ``relation`` expressed in the dataset's ``unit`` (see the module docstring).

    Examples
    --------
    >>> convert(Decimal("0.5"), Decimal(0), ADD_REMOVE, REPLACE_ONE)
    (Decimal('1.0'), Decimal('0'))
    """
    check_unit(relation), check_unit(unit)
    if relation == unit:
        return epsilon, delta
    if relation == ADD_REMOVE:
        with localcontext() as exact:
            exact.prec, exact.rounding = 40, ROUND_CEILING
            grown = delta * (1 + epsilon.exp()) if delta else Decimal(0)
        return epsilon * 2, delta_decimal(grown)
    raise UnitOfProtectionError(
        _(
            "This release protects one person's values but publishes how many rows the table has, so it cannot meet the "
            "dataset's unit ('one person's row may be added or removed'). Pad the copy to a noisy row count, or declare "
            "the unit 'one person's values may change' for this dataset on the Privacy page."
        )
    )
