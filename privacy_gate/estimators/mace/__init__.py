"""MACE (Liu et al.): the optimal membership advantage of a query with confidence bounds, and
per-record risk. The public estimators and their result types (:mod:`.advantage`), the query
models behind them (:mod:`._models`), the DP ceiling (:mod:`.dp`), the generalised metrics PPV,
AM and weighted accuracy (:mod:`.generalized`), and MACE for a gate run: per attack, for the
combined query and per subgroup (:mod:`.queries`).

The package itself imports none of them: importing one (the DP ceiling, say) loads only what
that module needs.
"""
