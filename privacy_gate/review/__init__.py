"""Decisions on recorded runs: a reviewer's review / approve / reject (:mod:`.decide`), one decision
per run (:mod:`.decision_lock`), decisions completed or rolled back after a crash
(:mod:`.decision_recovery`), the reconciliation of a workdir (:mod:`.doctor`), and one decision
per release for scheduled runs (:mod:`.prior_decision`).

Above :mod:`privacy_gate.runs`: an approval with ``--suppress`` re-gates through
:func:`privacy_gate.runs.regate.regate_run`, imported only then, so ``review`` and ``reject`` start
without the gate.
"""
