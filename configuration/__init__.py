"""Configuration: the settings model (`settings`: DA_* variables and the grammars of their values), how it is
read from the environment and the TOML file (`loading`), and the reference page written from it
(`python -m configuration.reference`, `make docs`).

The bottom of the stack beside domain/: imports nothing of ours, so every other package may import it."""
