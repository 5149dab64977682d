"""Studies of a generator beyond one gate run, each fitting it many times: the DP audit
(:mod:`.dp_audit`: the audit game through the executor's ``map``; :mod:`.dp_audit_one_run`:
Steinke et al.'s one-run audit; :mod:`.dp_audit_gate`: the release's ``dp_audit`` stage and
``privacy-gate audit-dp``) and the dependency study (:mod:`.dependency_splits`,
:mod:`.dependency_study`, :mod:`.dependency_summary`).

Below :mod:`privacy_gate.runs` (a release run includes the DP audit as a stage), above
:mod:`privacy_gate.pipeline` (its executors run the studies' fits).
"""
