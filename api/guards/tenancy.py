"""Who is calling: every request acts for one tenant, and every resource belongs to the tenant that made it.

`DA_API_KEYS` (and `DA_API_KEYS_FILE`) entries are either a plain `key`, a tenant of its own, or
`tenant:key`, which puts several keys in one named tenant. Without keys the API has one tenant,
`default`. The tenant is resolved by the auth middleware (api/guards/auth.py) and reaches handlers as a
dependency, so no route can forget to scope what it reads.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Request

from configuration.settings import SettingsError

DEFAULT_TENANT = "default"
"""The tenant of no-auth mode, and the owner of rows made before tenancy existed."""

_TENANT_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")


@dataclass(frozen=True)
class Principal:
    tenant: str
    key_id: str
    """Names the API key without revealing it (limits are counted per key); `anonymous` without keys."""


ANONYMOUS = Principal(tenant=DEFAULT_TENANT, key_id="anonymous")


def key_digest(key: str) -> bytes:
    return hashlib.sha256(key.encode()).digest()


def principals(entries: tuple[str, ...]) -> dict[bytes, Principal]:
    """Each accepted key's digest → who it is. A plain key's tenant is named after its digest, so the
    key itself never appears in rows, search attributes or logs."""
    accepted: dict[bytes, Principal] = {}
    for entry in entries:
        tenant, separator, key = entry.partition(":")
        digest = key_digest(key if separator else entry)
        key_id = "key-" + digest.hex()[:16]
        if not separator:
            tenant = key_id
        elif not _TENANT_NAME.match(tenant) or not key:
            raise SettingsError(
                "API key entries are 'key' or 'tenant:key', the tenant of 1-64 letters, digits, '_', '.' or '-'; "
                f"an entry for tenant {tenant[:64]!r} is not"
            )
        if digest in accepted and accepted[digest].tenant != tenant:
            raise SettingsError(f"One API key is given to two tenants ({accepted[digest].tenant} and {tenant})")
        accepted[digest] = Principal(tenant=tenant, key_id=key_id)
    return accepted


async def current_principal(request: Request) -> Principal:
    principal: Principal = request.scope.get("state", {}).get("principal", ANONYMOUS)
    return principal


async def current_tenant(request: Request) -> str:
    return (await current_principal(request)).tenant


TenantDep = Annotated[str, Depends(current_tenant)]
PrincipalDep = Annotated[Principal, Depends(current_principal)]
