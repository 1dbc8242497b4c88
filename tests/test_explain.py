"""ε in words: the likelihood ratio e^ε is written right for every ε an owner can type."""

from __future__ import annotations

import pytest

from dpcore.explain import e_to_the, epsilon_warnings, one_person_sentence


@pytest.mark.parametrize(
    ("epsilon", "words"),
    [
        (1.0, "2.72"),
        (5.0, "148"),
        (13.8, "985 thousand"),
        (50.0, "5 × 10^21"),
        (700.0, "1 × 10^304"),
        (1000.0, "2 × 10^434"),
        (1e9, "8 × 10^434294481"),
    ],
)
def test_e_to_the_epsilon_never_overflows(epsilon, words):
    assert e_to_the(epsilon) == words


def test_a_huge_epsilon_is_said_as_it_is():
    assert "8 × 10^434294481" in epsilon_warnings(1e9)[0]
    assert "8 × 10^434294481 times more likely" in one_person_sentence(1e9)
