"""The client tool of llama-stack's own `Agent` examples, as plain Python for every client version's tests.

Each wraps it with its own client's `client_tool`: llama-stack-client 0.2.12 in the suite's venv
(tests/llama_stack/test_llama_stack_client.py), 0.7.x in `.venv-lsc` (lsc_agent.py, run as a script beside this file).
"""

from __future__ import annotations

from typing import Any

calls: list[dict[str, Any]] = []
"""The tool's calls, as the client's helper made them."""


def get_boiling_point(liquid_name: str, celcius: bool = True) -> int:
    """Returns the boiling point of a liquid in Celcius or Fahrenheit.

    :param liquid_name: The name of the liquid
    :param celcius: Whether to return the boiling point in Celcius
    :return: The boiling point of the liquid
    """
    calls.append({"liquid_name": liquid_name, "celcius": celcius})
    return -100 if liquid_name == "polyjuice" else -1
