"""Plots and human-readable summaries of a gate run (no raw record values ever)."""
