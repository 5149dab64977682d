"""privacy-gate."""
