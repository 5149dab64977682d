"""``python -m privacy_gate.cli``: the same command as ``privacy-gate``."""

from privacy_gate.cli import main

main()
