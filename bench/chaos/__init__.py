"""Turns under fire: `python -m bench.chaos [--quick]` kills processes mid-turn; no turn may be lost or doubled."""
