"""Endpoint signing secrets sealed for the store (configuration/sealing.py) with DA_CREDENTIALS_KEY, as
turns' MCP credentials are: the API seals one when it makes it, the delivery activity opens it to sign. A
secret is never in a workflow's input or history, a log line, a trace or a listing."""

from __future__ import annotations

from configuration.sealing import Sealer, Unsealable


class SecretUnreadable(Exception):
    """A sealed secret cannot be opened with this process's key."""


NO_KEY = (
    "This server cannot keep webhook signing secrets: its operator has not set DA_CREDENTIALS_KEY "
    "(the Fernet key that encrypts them at rest). Ask for the key to be configured."
)


class SecretSeal:
    def __init__(self, key: str) -> None:
        self._sealer = Sealer(key)

    def seal(self, secret: str) -> str:
        return self._sealer.seal(secret)

    def open(self, sealed: str) -> str:
        try:
            return self._sealer.open(sealed)
        except Unsealable:
            raise SecretUnreadable(
                "The endpoint's signing secret cannot be decrypted: this process's DA_CREDENTIALS_KEY is not the "
                "key that encrypted it. Give every API and worker the same key, or rotate the endpoint's secret."
            ) from None
