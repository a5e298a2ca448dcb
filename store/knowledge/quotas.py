"""Per-tenant quotas of knowledge (files, their bytes, vector stores), counted and enforced in the transaction
that adds to them under the tenant's quota lock (store/tenancy/quotas.py), so concurrent requests cannot pass a
quota together."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class FileQuota:
    max_files: int
    max_bytes: int
