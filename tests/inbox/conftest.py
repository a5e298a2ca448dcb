"""Two fresh tenants on an API that requires keys: each module's items are theirs alone."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from tests.inbox.waiting import Tenant
from tests.support.stack import Stack


@pytest.fixture(scope="module")
def tenants(stack: Stack) -> Iterator[tuple[Tenant, Tenant]]:
    """Two fresh tenants on an API that requires keys: this module's items are theirs alone."""
    suffix = uuid.uuid4().hex[:8]
    keys = (f"inbox-a-{suffix}:key-a-{suffix}", f"inbox-b-{suffix}:key-b-{suffix}")
    with stack.other_api(stack.settings.model_copy(update=dict(api_keys=keys))) as url:
        made = (Tenant(url, f"key-a-{suffix}"), Tenant(url, f"key-b-{suffix}"))
        yield made
        for tenant in made:
            tenant.close()
