"""Configuration: the settings model (DA_* variables, the TOML file) and the grammars of its values.

The bottom of the stack beside domain/: imports nothing of ours, so every other package may import it."""
