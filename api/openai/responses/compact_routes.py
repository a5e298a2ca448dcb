"""`POST /v1/responses/compact`: a context made short — its user messages, then one compaction item.

The context is the `previous_response_id` chain and/or the `input` (compaction items in either are read as
the summaries they carry). The model writes the summary in a `CompactContext` workflow
(workflows/compaction.py), so a worker dying mid-summary costs a retry, not the request; the messages to
summarise wait in the store (`compactions`), not in the workflow's payloads. The summary comes back sealed
(compaction/seal.py): the client holds it and sends it back in later `input`, and only this server can read it.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from datetime import UTC, datetime
from typing import Annotated, Any

from fastapi import APIRouter, Body
from pydantic import Field
from temporalio.client import WorkflowFailureError
from temporalio.exceptions import ActivityError, ApplicationError

from api.guards.tenancy import PrincipalDep
from api.openai.errors import ERROR_RESPONSES, OpenAIError, invalid, not_found
from api.openai.parameters import field_names, refuse_unknown
from api.openai.responses import ids
from api.openai.responses.compaction_items import NO_KEY, as_read, compaction_seal, open_compactions, user_messages
from api.openai.responses.context import resolve_references, to_messages
from api.openai.responses.create import chain_items, stored_input
from api.openai.responses.input_items import InputItem, Lenient, MessageItem
from api.openai.responses.request import parse_body
from api.services import ServicesDep
from providers import openai_format
from workflows.compaction import CompactionDone, CompactionStart, CompactionWorkflow, compaction_workflow_id

log = logging.getLogger(__name__)

router = APIRouter(tags=["responses"], responses=ERROR_RESPONSES)


class CompactRequest(Lenient):
    model: str = Field(min_length=1)
    input: str | list[InputItem] | None = None
    instructions: str | None = None
    previous_response_id: str | None = None

    def items(self) -> list[InputItem]:
        if isinstance(self.input, str):
            return [MessageItem(role="user", content=self.input)]
        return list(self.input or [])


def _failure(error: WorkflowFailureError) -> OpenAIError:
    cause = error.cause.cause if isinstance(error.cause, ActivityError) else error.cause
    reason = cause.message if isinstance(cause, ApplicationError) else str(cause or error)
    return OpenAIError(502, f"The model could not write the summary: {reason}")


@router.post("/responses/compact")
async def compact_response(
    raw: Annotated[dict[str, Any], Body(description="The compact parameters of the OpenAI Responses API")],
    services: ServicesDep,
    principal: PrincipalDep,
) -> Any:
    """Compact a context: the answer's output is its user messages followed by one compaction item, to send
    as (the start of) a later request's input."""
    refuse_unknown(raw, field_names(CompactRequest))
    body = parse_body(CompactRequest, raw)
    settings = services.settings
    if settings.model(body.model) is None:
        known = ", ".join(sorted(settings.models))
        raise invalid(
            f"The model '{body.model}' is not configured on this server; configured: {known}.",
            "model",
            "model_not_found",
        )
    seal = compaction_seal(settings)
    if seal is None:
        raise invalid(f"Compaction is unavailable: {NO_KEY}")
    tenant = principal.tenant
    prior: list[InputItem] = []
    if body.previous_response_id is not None:
        prior = await chain_items(services, services.store.responses, tenant, body.previous_response_id)
    window = [*prior, *resolve_references(body.items(), prior)]
    if not window:
        raise invalid("Nothing to compact: send 'input', 'previous_response_id' or both.", "input")
    read = as_read(window, open_compactions(settings, tenant, window))
    messages = openai_format.system_message(body.instructions or "")
    messages += openai_format.context_messages(to_messages(read))

    compaction_id = "cmpr_" + uuid.uuid4().hex
    compactions = services.store.compactions
    created_at = datetime.now(UTC)
    await compactions.add(compaction_id, tenant, body.model, messages, created_at)
    try:
        handle = await services.turns.client.start_workflow(
            CompactionWorkflow.run,
            CompactionStart(compaction_id=compaction_id),
            id=compaction_workflow_id(compaction_id),
            task_queue=settings.task_queue,
            static_summary=f"compact · {len(messages)} messages",
        )
        done: CompactionDone = await asyncio.wait_for(handle.result(), settings.response_wait)
    except WorkflowFailureError as failed:
        await compactions.delete(tenant, compaction_id)  # nothing will read its messages again
        raise _failure(failed) from failed
    except TimeoutError:
        raise OpenAIError(
            503, f"The summary was not written within {settings.response_wait:.0f} s (DA_RESPONSE_WAIT); retry later."
        ) from None
    except Exception as error:
        log.exception("the compaction workflow of %s could not run", compaction_id)
        raise OpenAIError(503, "Could not run the compaction (Temporal unavailable); retry shortly.") from error
    record = await compactions.get(compaction_id)
    if record is None or record.summary is None:
        raise OpenAIError(503, "The compaction's summary is not in the store (was it deleted meanwhile?); retry.")
    item = {
        "type": "compaction",
        "id": ids.new_compaction_item_id(),
        "encrypted_content": seal.seal(tenant, record.summary, "user_messages"),
    }
    return {
        "id": compaction_id,
        "object": "response.compaction",
        "created_at": int(created_at.timestamp()),
        "output": [*stored_input(list(user_messages(read))), item],
        "usage": {
            "input_tokens": done.input_tokens,
            "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
            "output_tokens": done.output_tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": done.input_tokens + done.output_tokens,
        },
    }


@router.delete("/responses/compact/{compaction_id}")
async def delete_compaction(compaction_id: str, services: ServicesDep, principal: PrincipalDep) -> Any:
    """Forget a compaction (OpenAI keeps none to delete): its summary, or the messages it had yet to summarise.
    The sealed item the client holds stays readable: the summary travels in it."""
    if not await services.store.compactions.delete(principal.tenant, compaction_id):
        raise not_found("Compaction", compaction_id)
    return {"id": compaction_id, "object": "response.compaction.deleted", "deleted": True}
