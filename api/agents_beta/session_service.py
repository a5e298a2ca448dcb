"""Creating sessions and starting their turns: what the session routes call, and what automations call to
create or feed a session. A session turn is a detached turn workflow (api/turn_gateway.py) whose settings
come from the session's agent snapshot and whose prior context is the session's earlier turns.

Every check runs before anything is written: a refused request leaves the session as it was.
"""

from __future__ import annotations

import hashlib
import logging
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from temporalio.common import SearchAttributePair

from api.agents_beta.spend_control import spend_store
from api.agents_beta.wire import AgentFields, SessionCreate, agent_body, check_metadata, parse
from api.responses.context import fit_context
from api.responses.errors import OpenAIError, invalid, not_found
from api.services import Services
from domain.content import (
    ImageContentItem,
    ImageData,
    InputMessage,
    TextContentItem,
    ToolResponseMessage,
    UserMessage,
    content_as_text,
)
from domain.turn_settings import ContextMessage, FunctionTool, TurnSettings
from domain.turns import InferenceStep, ToolExecutionStep, TurnStatus
from domain.webhook_events import agent_session_data
from store.agent_sessions import BetaSessionRecord
from store.webhooks import WebhookStore, record_event
from webhooks.dispatch import DeliveryStarter
from workflows.contracts import TurnPlan, TurnStart
from workflows.search_attributes import AGENT_ID, SESSION_ID

log = logging.getLogger(__name__)

SUPPORTED_ENVIRONMENT = '{"type": "none"}'
OUT_OF_SCOPE_ENVIRONMENTS = {
    "openai_hosted": "hosted containers are OpenAI's own sandboxes",
    "self_hosted": "self-hosted environments need the Codex exec-server remote protocol",
}
ACTIVE = (TurnStatus.RUNNING, TurnStatus.AWAITING_INPUT)
WEBHOOK_BATCH = 100


@dataclass(frozen=True)
class SessionTurn:
    """A turn started on a session (or found started, for a retried Idempotency-Key)."""

    session_id: str
    turn_id: str
    ordinal: int
    """0 for the session's first turn."""
    created: bool
    """False when this call found the turn already there (a retry) and started nothing new."""


@dataclass(frozen=True)
class CreatedSession:
    session: BetaSessionRecord
    turn: SessionTurn | None
    """The turn of the create's `input`; None without input."""


def new_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex}"


def _now() -> datetime:
    return datetime.now(UTC)


# --- input


def input_messages(value: str | list[dict[str, Any]] | None, param: str = "input") -> list[InputMessage]:
    """The caller's input as the runtime's user messages: a string, or `[{role: "user", content: [...]}]`."""
    if value is None or value == "" or value == []:
        raise invalid(f"{param} is required: give the user's message.", param)
    if isinstance(value, str):
        return [UserMessage(content=value)]
    messages: list[InputMessage] = []
    for index, message in enumerate(value):
        if not isinstance(message, dict) or message.get("role", "user") != "user":
            raise invalid(f"{param}[{index}]: input messages have role 'user'.", param)
        content = message.get("content")
        if isinstance(content, str):
            messages.append(UserMessage(content=content))
            continue
        if not isinstance(content, list) or not content:
            raise invalid(f"{param}[{index}].content: give a string or a list of input_text/input_image parts.", param)
        parts: list[TextContentItem | ImageContentItem] = []
        for part in content:
            kind = part.get("type") if isinstance(part, dict) else None
            if kind == "input_text" and isinstance(part.get("text"), str):
                parts.append(TextContentItem(text=part["text"]))
            elif kind == "input_image" and isinstance(part.get("image_url"), str):
                parts.append(ImageContentItem(image=ImageData.model_validate({"url": {"uri": part["image_url"]}})))
            else:
                raise invalid(
                    f"{param}[{index}].content: unsupported part {kind!r}; use input_text or input_image.", param
                )
        messages.append(UserMessage(content=parts))
    return messages


def summary(messages: list[InputMessage]) -> str:
    return content_as_text(messages[-1].content)[:1000] if messages else ""


# --- agents and environments


def check_environment(environment: Any) -> None:
    if environment is None:
        raise invalid(f"environment is required; this server supports {SUPPORTED_ENVIRONMENT}.", "environment")
    kind = environment.type
    if kind == "none":
        return
    why = OUT_OF_SCOPE_ENVIRONMENTS.get(kind, "it is not an environment type this server knows")
    raise invalid(
        f"environment type '{kind}' is not supported on this server ({why}); use {SUPPORTED_ENVIRONMENT}.",
        "environment.type",
        "unsupported_environment",
    )


def check_model(services: Services, model: str | None, param: str) -> None:
    if not model:
        raise invalid("The session's agent needs a model: give agent.model or an agent_id.", param)
    if services.settings.model(model) is None:
        known = ", ".join(sorted(services.settings.models))
        raise invalid(
            f"The model '{model}' is not configured on this server; configured: {known}.", param, "model_not_found"
        )


async def resolve_agent(
    services: Services, tenant: str, agent_id: str | None, inline: AgentFields | None
) -> tuple[str | None, dict[str, Any]]:
    """The session's agent snapshot: the saved agent's fields with the inline ones over them; its saved id."""
    body: dict[str, Any] = {}
    if agent_id is not None:
        saved = await services.store.agent_sessions.agent(tenant, agent_id)
        if saved is None:
            raise not_found("Agent", agent_id)
        body = dict(saved.body)
    if inline is not None:
        given = inline.model_fields_set
        fresh = agent_body(inline.model_copy(update={"model": inline.model or body.get("model")}), model_required=False)
        body |= {key: fresh[key] for key in fresh if key in given and getattr(inline, key, None) is not None}
        if not body.get("text"):
            body = fresh | body
    if agent_id is None and inline is None:
        raise invalid("Give the session an agent: an inline `agent` with a model, or an `agent_id`.", "agent")
    if "text" not in body:
        body = agent_body(AgentFields(model=body.get("model")), model_required=False) | body
    check_model(services, body.get("model"), "agent.model")
    body.pop("metadata", None)
    return agent_id, body


# --- webhooks the API causes


async def announce(services: Services, tenant: str, event_type: str, session_id: str, cause_id: str) -> None:
    """Record `event_type` for the session's webhook endpoints and start its deliveries (the outbox sweep
    starts any this misses). Never fails the request that caused it."""
    data = agent_session_data(event_type, session_id)
    cause = f"{cause_id}:{event_type}"
    try:
        added = await services.store.database.write(
            lambda tx: record_event(tx, tenant, event_type, data, cause, cause_id)
        )
        if added:
            webhooks = WebhookStore(services.store.database)
            starter = DeliveryStarter(services.turns.client, services.settings.task_queue, webhooks)
            await starter.start(await webhooks.unstarted(WEBHOOK_BATCH, cause_id))
    except Exception:
        log.warning("webhook %s of session %s not recorded or started now", event_type, session_id, exc_info=True)


# --- sessions


async def create_session(
    services: Services,
    tenant: str,
    body: SessionCreate,
    session_id: str | None = None,
    idempotency_key: str | None = None,
) -> CreatedSession:
    """Create a session (environment `none`) and, with `input`, start its first turn.

    `body` is sessions.create's body; automations build one from their target, with the session's id and its
    first turn's idempotency key derived from the occurrence they deliver. Raises OpenAIError (4xx) for
    anything the caller must change."""
    check_environment(body.environment)
    metadata = check_metadata(body.metadata)
    if body.vault_ids:
        raise invalid("vault_ids: vaults are not supported by this server; send no vault_ids.", "vault_ids")
    if body.review not in (None, "none"):
        raise invalid("review: only 'none' is supported by this server.", "review")
    agent_id, agent = await resolve_agent(services, tenant, body.agent_id, body.agent)
    messages = input_messages(body.input)  # environment `none`: input is required
    now = _now()
    spend = body.spend_control.limit if body.spend_control is not None else None
    record = BetaSessionRecord(
        session_id=session_id or new_id("sess"),
        tenant_id=tenant,
        agent_id=agent_id,
        body={
            "agent": {"id": agent_id or new_id("agent"), **agent},
            "environment": {"type": "none"},
            "metadata": metadata,
            "spend_control": {"limit": spend},
            "vault_ids": [],
            **({"prompt_cache_options": body.prompt_cache_options} if body.prompt_cache_options else {}),
        },
        current_turn_id=None,
        turn_count=0,
        created_at=now,
        last_active_at=now,
    )
    await services.store.agent_sessions.add_session(record)
    if spend is not None:  # before the first turn's first model call, which checks it
        await spend_store(services.store.database).set_limit(record.session_id, spend)
    await announce(services, tenant, "agent.session.created", record.session_id, record.session_id)
    turn = await _start(services, tenant, record, messages, idempotency_key)
    stored = await services.store.agent_sessions.session(tenant, record.session_id)
    return CreatedSession(stored or record, turn)


async def start_turn(
    services: Services,
    tenant: str,
    session_id: str,
    input: str | list[dict[str, Any]],
    idempotency_key: str | None = None,
) -> SessionTurn:
    """Start a turn on an idle (or failed) session with this input: `agent.session.input.message`.

    A busy session (a turn running or waiting for results) is refused with a 409 that says so; with an
    `idempotency_key`, a retry finds the turn its first attempt started and starts nothing new."""
    record = await services.store.agent_sessions.session(tenant, session_id)
    if record is None:
        raise not_found("Session", session_id)
    return await _start(services, tenant, record, input_messages(input), idempotency_key)


def _turn_id(tenant: str, session_id: str, idempotency_key: str | None) -> str:
    if idempotency_key is None:
        return new_id("turn")
    return "turn_" + hashlib.sha256(f"{tenant}\0{session_id}\0{idempotency_key}".encode()).hexdigest()[:32]


async def _start(
    services: Services,
    tenant: str,
    record: BetaSessionRecord,
    messages: list[InputMessage],
    idempotency_key: str | None,
) -> SessionTurn:
    sessions = services.store.agent_sessions
    turn_id = _turn_id(tenant, record.session_id, idempotency_key)
    found = await sessions.session_turn(turn_id)
    if found is not None:  # a retry: the first attempt claimed it; make sure its workflow runs
        if await services.store.turn_status(turn_id) == TurnStatus.RUNNING:
            await _start_workflow(services, tenant, record, turn_id, messages, _now())
        return SessionTurn(record.session_id, turn_id, found.ordinal, created=False)
    previous = record.current_turn_id
    if previous is not None and await services.store.turn_status(previous) in ACTIVE:
        raise busy(record.session_id, previous)
    settings = turn_settings(record.body["agent"])
    context = await _context_after(services, previous)
    started_at = _now()
    await services.store.begin_detached_turn(tenant, turn_id, messages, context, turn_id, settings, started_at)
    ordinal = await sessions.claim_turn(tenant, record.session_id, turn_id, previous, started_at)
    if ordinal is None:  # another input got there first
        await services.store.delete_detached_turn(tenant, turn_id)
        raise busy(record.session_id, None)
    await announce(services, tenant, "agent.session.in_progress", record.session_id, turn_id)
    await _start_workflow(services, tenant, record, turn_id, messages, started_at)
    return SessionTurn(record.session_id, turn_id, ordinal, created=True)


def busy(session_id: str, turn_id: str | None) -> OpenAIError:
    which = f"turn {turn_id}" if turn_id else "another turn"
    return OpenAIError(
        409,
        f"Session {session_id} is busy with {which}: send input once it is idle (or cancel the turn with an "
        "agent.session.input.cancel event).",
        "events",
        "session_busy",
    )


def turn_settings(agent: dict[str, Any]) -> TurnSettings:
    text_format = (agent.get("text") or {}).get("format") or {}
    response_format = None
    if text_format.get("type") == "json_schema":
        schema = {"name": text_format.get("name", "output"), "schema": text_format.get("schema", {})}
        if text_format.get("strict") is not None:
            schema["strict"] = text_format["strict"]
        response_format = {"type": "json_schema", "json_schema": schema}
    elif text_format.get("type") == "json_object":
        response_format = {"type": "json_object"}
    return TurnSettings(
        model=agent["model"],
        instructions=agent.get("instructions") or "",
        function_tools=[
            FunctionTool(
                name=tool["name"],
                description=tool.get("description") or "",
                parameters=tool.get("parameters") or {"type": "object", "properties": {}},
                strict=tool.get("strict"),
            )
            for tool in agent.get("tools") or []
            if tool.get("type") == "function"
        ],
        response_format=response_format,
    )


async def _context_after(services: Services, previous: str | None) -> list[ContextMessage]:
    """The prior context of the session's next turn: the previous turn's context, input and steps, within
    DA_MAX_HISTORY_BYTES (the oldest dropped first)."""
    if previous is None:
        return []
    found = await services.store.detached_context(previous)
    if found is None:
        return []
    turn, context = found
    messages: list[ContextMessage] = list(context)
    messages += [message for message in turn.input_messages if isinstance(message, UserMessage)]
    for step in turn.steps:
        if isinstance(step, InferenceStep):
            messages.append(step.model_response)
        elif isinstance(step, ToolExecutionStep):
            messages += [ToolResponseMessage(call_id=r.call_id, content=r.content) for r in step.tool_responses]
            messages += step.followup_messages
    return fit_context(messages, services.settings.max_history_bytes, "auto")


async def _start_workflow(
    services: Services,
    tenant: str,
    record: BetaSessionRecord,
    turn_id: str,
    messages: list[InputMessage],
    started_at: datetime,
) -> None:
    agent = record.body["agent"]
    start = TurnStart(
        turn_id=turn_id,
        plan=TurnPlan(
            model=agent["model"],
            client_tool_names=sorted(
                tool["name"] for tool in agent.get("tools") or [] if tool.get("type") == "function"
            ),
            max_infer_iters=services.settings.max_infer_iters,
            settings_id=turn_id,
        ),
        started_at=started_at,
        awaiting_input_timeout=services.settings.awaiting_input_timeout,
        continue_as_new_after_events=services.settings.continue_as_new_after_events,
        inference_writes_end=True,
        spend_session_id=record.session_id,
    )
    owners = [SearchAttributePair(SESSION_ID, record.session_id), SearchAttributePair(AGENT_ID, agent["id"])]
    try:
        await services.turns.start_once(start, tenant, summary(messages), extra_attributes=owners)
    except Exception as error:
        log.exception("starting the workflow of session %s's turn %s failed", record.session_id, turn_id)
        await services.store.abandon_turn(turn_id, "Its workflow could not be started.")
        raise OpenAIError(503, "Could not start the session's turn (Temporal unavailable); retry shortly.") from error


def parse_create(raw: dict[str, Any]) -> SessionCreate:
    body: SessionCreate = parse(SessionCreate, raw, "session")
    return body
