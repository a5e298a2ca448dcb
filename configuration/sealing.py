"""Sealing: what the deployment keeps at rest, or hands a client, that only its own processes may read.

MCP headers of a running turn (tool_runtime/credential_seal.py), webhook signing secrets (webhooks/secrets.py)
and compaction summaries (compaction/seal.py) are each sealed here: Fernet (AES-CBC + HMAC-SHA256) under the
deployment's DA_CREDENTIALS_KEY, which every API and worker shares, or under a key derived from it with HKDF
for one purpose, so that what is sealed for that purpose never opens as anything else.
"""

from __future__ import annotations

import base64
import json
from typing import Any

from cryptography.fernet import Fernet, InvalidToken
from cryptography.hazmat.primitives.hashes import SHA256
from cryptography.hazmat.primitives.kdf.hkdf import HKDF


class Unsealable(ValueError):
    """Not sealed with this process's key (for this purpose), altered, or truncated."""


class Sealer:
    def __init__(self, credentials_key: str, purpose: bytes | None = None) -> None:
        """`credentials_key`: the Fernet key of DA_CREDENTIALS_KEY; `purpose`: derive a key of its own from it."""
        if purpose is None:
            self._fernet = Fernet(credentials_key)
            return
        secret = base64.urlsafe_b64decode(credentials_key)
        derived = HKDF(algorithm=SHA256(), length=32, salt=None, info=purpose).derive(secret)
        self._fernet = Fernet(base64.urlsafe_b64encode(derived))

    def seal(self, text: str) -> str:
        return self._fernet.encrypt(text.encode()).decode()

    def open(self, sealed: str) -> str:
        try:
            return self._fernet.decrypt(sealed.encode()).decode()
        except (InvalidToken, ValueError):
            raise Unsealable("not sealed with this key, or altered") from None

    def seal_json(self, document: object) -> str:
        return self.seal(json.dumps(document))

    def open_json(self, sealed: str) -> Any:
        try:
            return json.loads(self.open(sealed))
        except ValueError as broken:  # Unsealable, or not a JSON document
            raise Unsealable(str(broken)) from None
