"""Attacks that show what differential privacy protects, measured on the owner's own table.

Three experiments, each a plain function that returns a result with tables and figures (the
Attack page, ``dpcore attack`` and ``benchmarks/attacks.py`` all call them):

:func:`attack_membership` (:mod:`~dpcore.attacks.membership`)
    Train a model with and without DP on a random half of the rows (or people) and let a
    loss-threshold attack and a LiRA-style attack with reference models tell members from
    non-members; ROC curves, AUC and the true-positive rate at a 1 % false-positive rate, beside
    the ceiling ε guarantees (:mod:`~dpcore.attacks.statistics`).
:func:`attack_reconstruction` (:mod:`~dpcore.attacks.reconstruction`)
    Guess people's true values back from the randomized copy, with and without knowing
    everything else about them, against ``e^ε/(e^ε + k − 1)`` and DP's bound on what the copy adds.
:func:`audit_model` (:mod:`~dpcore.attacks.audit`)
    Fit a model many times with and without one record and bound its ε from below with
    Clopper–Pearson intervals; a deliberately broken control shows the audit can see a leak.

:mod:`~dpcore.attacks.summary` says what they found in sentences and writes a one-page HTML
summary. **Everything here is owner's eyes only**: it runs on the raw rows, releases nothing,
and charges no privacy budget (no ledger is ever touched).
"""

from dpcore.attacks.audit import CANARIES, CONTROLS, AuditResult, AuditRun, audit_model
from dpcore.attacks.membership import (
    ATTACKS,
    QUICK,
    THOROUGH,
    AttackCurve,
    AttackSettings,
    MembershipResult,
    ModelUnderAttack,
    attack_membership,
)
from dpcore.attacks.reconstruction import ColumnReconstruction, ReconstructionResult, attack_reconstruction
from dpcore.attacks.summary import (
    OWNER_ONLY,
    as_json,
    audit_sentences,
    html_report,
    membership_sentences,
    reconstruction_sentences,
)

__all__ = [
    "ATTACKS",
    "CANARIES",
    "CONTROLS",
    "OWNER_ONLY",
    "QUICK",
    "THOROUGH",
    "AttackCurve",
    "AttackSettings",
    "AuditResult",
    "AuditRun",
    "ColumnReconstruction",
    "MembershipResult",
    "ModelUnderAttack",
    "ReconstructionResult",
    "as_json",
    "attack_membership",
    "attack_reconstruction",
    "audit_model",
    "audit_sentences",
    "html_report",
    "membership_sentences",
    "reconstruction_sentences",
]
