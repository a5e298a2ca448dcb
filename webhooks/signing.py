"""Standard Webhooks signatures, as `client.webhooks.verify_signature` checks them.

`webhook-signature` holds `v1,<base64 HMAC-SHA256 of "id.timestamp.body">` for each secret that signs
(two during a rotation that keeps the old one), space-separated; secrets are `whsec_<base64 key>`.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets

SECRET_PREFIX = "whsec_"
_KEY_BYTES = 32


def new_secret() -> str:
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(_KEY_BYTES)).decode()


def secret_hint(secret: str) -> str:
    """Enough of the secret to tell two apart, too little to sign with."""
    return f"{secret[: len(SECRET_PREFIX) + 3]}…{secret[-3:]}"


def _key(secret: str) -> bytes:
    return base64.b64decode(secret.removeprefix(SECRET_PREFIX))


def signature(secret: str, message_id: str, timestamp: int, body: bytes) -> str:
    signed = f"{message_id}.{timestamp}.".encode() + body
    return "v1," + base64.b64encode(hmac.new(_key(secret), signed, hashlib.sha256).digest()).decode()


def signed_headers(signing_secrets: list[str], message_id: str, timestamp: int, body: bytes) -> dict[str, str]:
    return {
        "content-type": "application/json",
        "webhook-id": message_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": " ".join(signature(s, message_id, timestamp, body) for s in signing_secrets),
    }
