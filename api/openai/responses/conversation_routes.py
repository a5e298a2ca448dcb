"""The Conversations API of the OpenAI dialect: conversations and their items (wire reference §1, §8).

A conversation belongs to the tenant that made it; another tenant's is "not found", like one that never
existed. Before its items are read or added, the runtime's `settle_conversation` appends what finished
responses of the conversation left to append, so items are in the order they happened.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Query
from pydantic import BaseModel, Field, StringConstraints

from api.guards.tenancy import TenantDep
from api.openai.errors import ERROR_RESPONSES, OpenAIError, not_found
from api.openai.pages import cursors
from api.openai.parameters import KnownParametersOnly
from api.openai.responses.conversation_items import InputItem, stored_item
from api.openai.responses.ids import new_conversation_id
from api.services import ServicesDep
from store.responses.conversations import Conversation, ConversationNotFound, DuplicateItem, ItemPage, UnknownCursor

MAX_ITEMS_PER_REQUEST = 20
"""OpenAI's limit on the items of one create or add request; openai-agents sends its items in batches of 20."""

Metadata = Annotated[
    dict[Annotated[str, StringConstraints(max_length=64)], Annotated[str, StringConstraints(max_length=512)]],
    Field(max_length=16, description="Up to 16 string pairs; keys up to 64 characters, values up to 512"),
]
Items = Annotated[list[InputItem], Field(max_length=MAX_ITEMS_PER_REQUEST)]

router = APIRouter(tags=["conversations"], responses=ERROR_RESPONSES)


class CreateConversationRequest(KnownParametersOnly):
    items: Items | None = Field(default=None, description=f"The first items, at most {MAX_ITEMS_PER_REQUEST}")
    metadata: Metadata | None = None


class UpdateConversationRequest(KnownParametersOnly):
    metadata: Metadata | None = Field(description="Replaces the metadata as a whole; null clears it")


class AddItemsRequest(KnownParametersOnly):
    items: Items = Field(description=f"Appended in this order, at most {MAX_ITEMS_PER_REQUEST}")


class ConversationObject(BaseModel):
    id: str
    object: Literal["conversation"] = "conversation"
    created_at: int = Field(description="Unix seconds")
    metadata: dict[str, str]


class ConversationDeleted(BaseModel):
    id: str
    object: Literal["conversation.deleted"] = "conversation.deleted"
    deleted: bool = True


class ConversationItemList(BaseModel):
    object: Literal["list"] = "list"
    data: list[dict[str, Any]] = Field(description="Responses items, each with its `id`")
    first_id: str
    last_id: str
    has_more: bool


async def _include(
    brackets: Annotated[list[str] | None, Query(alias="include[]", description="Accepted and ignored")] = None,
    plain: Annotated[list[str] | None, Query(alias="include", description="Accepted and ignored")] = None,
) -> list[str]:
    """`include[]` as the openai SDK encodes it, or `include`: extra output data this server has none of."""
    return [*(brackets or []), *(plain or [])]


IncludeDep = Annotated[list[str], Depends(_include)]


@contextmanager
def _refusals(conversation_id: str) -> Iterator[None]:
    """The store's refusals as the caller's errors."""
    try:
        yield
    except ConversationNotFound as missing:
        raise not_found("Conversation", conversation_id) from missing
    except DuplicateItem as duplicate:
        raise OpenAIError(
            400,
            f"An item with id '{duplicate.item_id}' is already in conversation '{conversation_id}' "
            "(or twice in this request); give each item a new id, or none to have one made.",
            param="items",
        ) from duplicate
    except UnknownCursor as cursor:
        raise OpenAIError(
            404,
            f"Item with id '{cursor.item_id}' not found in conversation '{conversation_id}'; `after` takes the id "
            "of an item of this conversation (a page's `last_id`).",
            param="after",
        ) from cursor


def _conversation(conversation: Conversation) -> ConversationObject:
    return ConversationObject(
        id=conversation.conversation_id,
        created_at=int(conversation.created_at.timestamp()),
        metadata=conversation.metadata,
    )


def _item_list(items: list[dict[str, Any]], has_more: bool = False) -> ConversationItemList:
    return ConversationItemList(
        data=items,
        **cursors(items),
        has_more=has_more,
    )


@router.post("/conversations", response_model=ConversationObject)
async def create_conversation(
    services: ServicesDep, tenant: TenantDep, body: CreateConversationRequest | None = None
) -> ConversationObject:
    """A new conversation, with its first items (`{}` and `{"items": []}` make an empty one)."""
    body = body or CreateConversationRequest()
    conversation_id = new_conversation_id()
    items = [stored_item(item) for item in body.items or []]
    with _refusals(conversation_id):
        created = await services.store.conversations.create(
            tenant, conversation_id, body.metadata or {}, items, datetime.now(UTC)
        )
    return _conversation(created)


@router.get("/conversations/{conversation_id}", response_model=ConversationObject)
async def get_conversation(services: ServicesDep, tenant: TenantDep, conversation_id: str) -> ConversationObject:
    with _refusals(conversation_id):
        return _conversation(await services.store.conversations.get(tenant, conversation_id))


@router.post("/conversations/{conversation_id}", response_model=ConversationObject)
async def update_conversation(
    services: ServicesDep, tenant: TenantDep, conversation_id: str, body: UpdateConversationRequest
) -> ConversationObject:
    with _refusals(conversation_id):
        updated = await services.store.conversations.update_metadata(tenant, conversation_id, body.metadata or {})
    return _conversation(updated)


@router.delete("/conversations/{conversation_id}", response_model=ConversationDeleted)
async def delete_conversation(services: ServicesDep, tenant: TenantDep, conversation_id: str) -> ConversationDeleted:
    """Delete the conversation with its items; responses made in it stay retrievable."""
    with _refusals(conversation_id):
        await services.store.conversations.delete(tenant, conversation_id)
    return ConversationDeleted(id=conversation_id)


@router.post("/conversations/{conversation_id}/items", response_model=ConversationItemList)
async def add_items(
    services: ServicesDep, tenant: TenantDep, conversation_id: str, body: AddItemsRequest, include: IncludeDep
) -> ConversationItemList:
    """Append items; the answer lists the items as stored (with their ids)."""
    items = [stored_item(item) for item in body.items]
    with _refusals(conversation_id):
        await services.settle_conversation(services, tenant, conversation_id)
        added = await services.store.conversations.append_items(tenant, conversation_id, items, datetime.now(UTC))
    return _item_list(added)


@router.get("/conversations/{conversation_id}/items", response_model=ConversationItemList)
async def list_items(
    services: ServicesDep,
    tenant: TenantDep,
    conversation_id: str,
    include: IncludeDep,
    after: Annotated[str | None, Query(description="List the items after this item id (a page's last_id)")] = None,
    limit: Annotated[int, Query(ge=1, le=100, description="Items per page, 1-100")] = 20,
    order: Annotated[Literal["asc", "desc"], Query(description="desc: newest first")] = "desc",
) -> ConversationItemList:
    with _refusals(conversation_id):
        await services.settle_conversation(services, tenant, conversation_id)
        page: ItemPage = await services.store.conversations.list_items(tenant, conversation_id, order, after, limit)
    return _item_list(page.items, page.has_more)


@router.get("/conversations/{conversation_id}/items/{item_id}", response_model=dict[str, Any])
async def get_item(
    services: ServicesDep, tenant: TenantDep, conversation_id: str, item_id: str, include: IncludeDep
) -> dict[str, Any]:
    with _refusals(conversation_id):
        await services.settle_conversation(services, tenant, conversation_id)
        item = await services.store.conversations.get_item(tenant, conversation_id, item_id)
    if item is None:
        raise not_found("Item", item_id)
    return item


@router.delete("/conversations/{conversation_id}/items/{item_id}", response_model=ConversationObject)
async def delete_item(
    services: ServicesDep, tenant: TenantDep, conversation_id: str, item_id: str
) -> ConversationObject:
    """Remove one item; the answer is the conversation (not a deletion marker), as OpenAI answers."""
    with _refusals(conversation_id):
        await services.settle_conversation(services, tenant, conversation_id)
        conversation = await services.store.conversations.delete_item(tenant, conversation_id, item_id)
    if conversation is None:
        raise not_found("Item", item_id)
    return _conversation(conversation)
