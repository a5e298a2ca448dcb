"""Configuration: the settings model (DA_* variables, the TOML file), the grammars of its values, and the
reference page written from it (`python -m configuration.reference`, `make docs`).

The bottom of the stack beside domain/: imports nothing of ours, so every other package may import it."""
