"""Peers side by side: our stack against OGX 1.5 and llama-stack 0.2.12 on the same scripted model.

    .venv/bin/python -m bench.peers --peer ogx|llama-stack|all [--quick]

Each peer installs into a virtual environment of its own under `.bench-venvs/` on first use (bench/peers/venvs.py).
"""
