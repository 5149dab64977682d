"""How a verdict, its figures and its evidence are said to a reader: every check in words
(:mod:`.checks`), the error budget's tests (:mod:`.budget`), the headline figures beside their null
levels (:mod:`.figures`), one sentence of evidence per flagged group (:mod:`.evidence`) and what
suppressing a group would give (:mod:`.what_if`).

Above the decision (``privacy_gate.gate``), which it reads and never changes; below everything that
shows a verdict (the run's record, the report, the review, the CLI).
"""
