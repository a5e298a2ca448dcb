"""All settings in one model: environment variables, optionally a TOML file (pydantic-settings; read by
configuration/loading.py).

Each setting is one field of `Settings`. Its environment variable is `DA_` + the field name in upper
case unless the field names another (`validation_alias`); in the TOML file named by `DA_CONFIG_FILE`
the same setting is that variable's name without `DA_`, in lower case, under `[durable_agents]`.
Models and shields also come as `[models."<id>"]` / `[shields."<id>"]` tables. The environment wins
over the file; for models and shields it wins per id.

Temporal's connection follows temporalio's envconfig conventions (TEMPORAL_ADDRESS,
TEMPORAL_NAMESPACE, TEMPORAL_API_KEY, TEMPORAL_TLS*, TEMPORAL_PROFILE, TEMPORAL_CONFIG_FILE),
so a profile that works with the `temporal` CLI works here. Provider API keys are never values
here: a model names the *environment variable* holding its key, which only the worker reads.
"""

from __future__ import annotations

import json
import math
from datetime import timedelta
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from cryptography.fernet import Fernet
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_settings import (
    BaseSettings,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

from configuration.allowlist import parse_allowlist

OFFLINE_MODEL_ID = "offline/echo"
BUILTIN_EMBEDDING_MODEL_ID = "wordllama/l2_supercat-256"
"""The embedding model that ships in the `wordllama` wheel: works offline, always offered."""
DEFAULT_MAX_DOCUMENT_BYTES = 1024 * 1024
DEFAULT_MAX_TOOL_REPLY_BYTES = 8 * 1024 * 1024
DEFAULT_MAX_REQUEST_BYTES = 1024 * 1024
MESSAGE_BYTES_CEILING = 1_400_000
"""Client tool results travel in a Temporal update (payloads up to 2 MB): one turn's input stays under this."""
ENV_PREFIX = "DA_"
FILE_SECTION = "durable_agents"


class SettingsError(ValueError):
    """A configuration value is wrong; the message says which and how to fix it."""


class ModelPricing(BaseModel):
    """What a model's tokens cost, in US dollars per million tokens: what an Agents API session's `spend_control`
    counts against its limit."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    input: float = Field(default=0.0, ge=0, allow_inf_nan=False)
    """USD per million input (prompt) tokens."""
    output: float = Field(default=0.0, ge=0, allow_inf_nan=False)
    """USD per million output (completion) tokens."""

    def cost_microcents(self, input_tokens: int, output_tokens: int) -> int:
        """The cost of one model call in millionths of a US cent, whole (USD per million tokens times tokens is
        that many micro-cents times 100): sums of them stay exact where cents would round each call."""
        return round((input_tokens * self.input + output_tokens * self.output) * 100)


class ModelSpec(BaseModel):
    """How to reach one model id that agents may name."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    provider: Literal["openai", "offline"]
    """`openai`: any OpenAI-compatible endpoint (vLLM, Ollama, llama.cpp, OpenAI, …): chat completions, or
    embeddings for an embedding model."""
    model_type: Literal["llm", "embedding"] = "llm"
    """`embedding`: an embeddings model (`/v1/embeddings`, vector stores) instead of a chat model."""
    embedding_dimension: int | None = Field(default=None, gt=0)
    """For an embedding model: the length of its vectors (its vector stores' index is made for it)."""
    base_url: str | None = None
    """The OpenAI-compatible endpoint, e.g. http://localhost:11434/v1 for Ollama."""
    api_key_env: str | None = None
    """Name of the environment variable (read by the worker) that holds the API key."""
    provider_model: str | None = None
    """The model name the provider knows, when it differs from the id agents use."""
    timeout_seconds: float = Field(default=120.0, gt=0)
    """The model client's timeout in seconds (to connect, and between bytes of the reply); Temporal retries a call
    that times out."""
    pricing: ModelPricing | None = None
    """`{"input": USD, "output": USD}` per million tokens, as the provider reports them used; unset: free (a local
    model). Agents API sessions with a `spend_control` limit pause when their calls' cost reaches it."""

    @model_validator(mode="after")
    def _openai_needs_an_endpoint(self) -> ModelSpec:
        if self.provider == "openai" and not self.base_url:
            raise ValueError("needs a base_url (the OpenAI-compatible endpoint, e.g. http://127.0.0.1:11434/v1)")
        if self.model_type == "embedding" and (self.provider != "openai" or not self.embedding_dimension):
            raise ValueError(
                "an embedding model needs provider 'openai' and its embedding_dimension (the built-in "
                f"{BUILTIN_EMBEDDING_MODEL_ID} needs no entry)"
            )
        return self


class ShieldSpec(BaseModel):
    """A shield agents may name in input_shields / output_shields (see providers/shields.py)."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    provider: Literal["regex", "llama_guard"]
    """`regex`: patterns over new text; `llama_guard`: ask a Llama-Guard-style model (`safe` / `unsafe`)."""
    patterns: list[str] = Field(default_factory=list)
    """For `regex`: a violation when any matches."""
    model: str | None = None
    """For `llama_guard`: the configured model id of the guard model."""
    violation_message: str = "I can't answer that. Can I help with something else?"
    """The turn's answer when the shield finds a violation (the turn ends with it)."""


# Parsers shared by fields of one kind. Each takes what the environment (always a string) or the
# TOML file (typed) gives and raises ValueError saying what is expected; `load_settings` puts the
# variable's name in front.


def _flag(raw: Any) -> bool:
    if isinstance(raw, bool):
        return raw
    lowered = str(raw).strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"must be true or false, got {raw!r}")


def _whole_number(raw: Any) -> int:
    if isinstance(raw, int) and not isinstance(raw, bool):
        return raw
    try:
        return int(str(raw).strip())
    except ValueError:
        raise ValueError(f"must be a whole number, got {raw!r}") from None


def _positive_int(raw: Any) -> int:
    number = _whole_number(raw)
    if number <= 0:
        raise ValueError(f"must be greater than 0, got {number}")
    return number


def _port(raw: Any) -> int:
    number = _whole_number(raw)
    if not 1 <= number <= 65535:
        raise ValueError(f"must be a port number from 1 to 65535, got {number}")
    return number


def _port_or_zero(raw: Any) -> int:
    number = _whole_number(raw)
    if not 0 <= number <= 65535:
        raise ValueError(f"must be a port number from 1 to 65535, or 0 for none, got {number}")
    return number


def _log_format(raw: Any) -> str:
    lowered = str(raw).strip().lower()
    if lowered not in ("text", "json"):
        raise ValueError(f"must be text or json, got {raw!r}")
    return lowered


def _seconds(raw: Any) -> timedelta | None:
    """A number of seconds; 0 or less means no limit."""
    if raw is None or isinstance(raw, timedelta):
        return raw
    try:
        seconds = float(str(raw).strip())
    except ValueError:
        raise ValueError(f"must be a number of seconds, got {raw!r}") from None
    if not math.isfinite(seconds) or seconds > timedelta.max.total_seconds():
        raise ValueError(f"must be a finite number of seconds (0 for no limit), got {raw!r}")
    return timedelta(seconds=seconds) if seconds > 0 else None


def _whole_number_or_off(raw: Any) -> int:
    """A whole number, 0 meaning no limit."""
    number = _whole_number(raw)
    if number < 0:
        raise ValueError(f"must be 0 (no limit) or more, got {number}")
    return number


def _comma_list(raw: Any) -> tuple[str, ...]:
    """`a, b` from the environment, or a list from the TOML file; blanks dropped."""
    items = raw.split(",") if isinstance(raw, str) else raw
    if not isinstance(items, list | tuple) or not all(isinstance(item, str) for item in items):
        raise ValueError(f"must be comma-separated text (or a list of strings in the file), got {raw!r}")
    return tuple(item.strip() for item in items if item.strip())


def _comma_list_or_unset(raw: Any) -> tuple[str, ...] | None:
    return None if raw is None else _comma_list(raw) or None


def _positive_seconds(raw: Any) -> float:
    try:
        seconds = float(str(raw).strip())
    except ValueError:
        raise ValueError(f"must be a number of seconds, got {raw!r}") from None
    if not math.isfinite(seconds) or seconds <= 0:
        raise ValueError(f"must be a number of seconds greater than 0, got {raw!r}")
    return seconds


def _outbound_allow(raw: Any) -> tuple[str, ...]:
    entries = _comma_list(raw)
    parse_allowlist(entries)  # raises ValueError naming the bad entry
    return entries


def _headers_by_url(raw: Any) -> dict[str, dict[str, str]]:
    """A JSON object (environment) or a table (file) of URL → {header name: value}."""
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError as exc:
            raise ValueError(f"is not valid JSON: {exc}") from None
    if not isinstance(raw, dict) or not all(
        isinstance(headers, dict) and all(isinstance(v, str) for v in headers.values()) for headers in raw.values()
    ):
        raise ValueError('must map endpoint URLs to headers: {"<url>": {"<name>": "<value>"}}')
    return raw


RETENTION_KINDS = (
    "responses",
    "conversations",
    "sessions",
    "turns",
    "compactions",
    "webhook_deliveries",
    "files",
    "vector_stores",
)
"""The kinds store/retention.py registers, then store/knowledge/retention.py's; a kind added there is added here."""


def _retention(raw: Any) -> dict[str, timedelta]:
    """`kind=seconds,…` from the environment (a table of kind = seconds in the file); 0 or less: kept forever."""
    if isinstance(raw, str):
        pairs = [item.partition("=") for item in raw.split(",") if item.strip()]
        if any(not separator for _, separator, _ in pairs):
            raise ValueError(f"must be kind=seconds pairs separated by commas, got {raw!r}")
        raw = {kind.strip(): value for kind, _, value in pairs}
    if not isinstance(raw, dict):
        raise ValueError(f"must be kind=seconds pairs separated by commas, got {raw!r}")
    unknown = sorted(set(raw) - set(RETENTION_KINDS))
    if unknown:
        raise ValueError(f"names unknown kinds {unknown}; known: {', '.join(RETENTION_KINDS)}")
    ttls = {kind: _seconds(value) for kind, value in raw.items()}
    return {kind: ttl for kind, ttl in ttls.items() if ttl is not None}


def _seconds_list(raw: Any) -> tuple[float, ...]:
    """Comma-separated seconds (a TOML list too), each a finite number >= 0."""
    entries = raw if isinstance(raw, list | tuple) else str(raw).split(",")
    delays: list[float] = []
    for entry in entries:
        try:
            seconds = float(str(entry).strip())
        except ValueError:
            raise ValueError(f"must be comma-separated numbers of seconds, got {entry!r} in {raw!r}") from None
        if not math.isfinite(seconds) or seconds < 0:
            raise ValueError(f"must be comma-separated numbers of seconds >= 0, got {entry!r}")
        delays.append(seconds)
    return tuple(delays)


WEBHOOK_RETRY_DELAYS = (5.0, 300.0, 1800.0, 7200.0, 18000.0, 36000.0, 36000.0, 36000.0, 36000.0, 43200.0, 43200.0)
"""Standard Webhooks' schedule (5 s, 5 min, 30 min, 2 h, 5 h, then 10 h) stretched to about 72 hours."""


Flag = Annotated[bool, BeforeValidator(_flag)]
PositiveInt = Annotated[int, BeforeValidator(_positive_int)]
LimitOrOff = Annotated[int, BeforeValidator(_whole_number_or_off)]
Port = Annotated[int, BeforeValidator(_port)]
PortOrZero = Annotated[int, BeforeValidator(_port_or_zero)]
LogFormat = Annotated[Literal["text", "json"], BeforeValidator(_log_format)]
Seconds = Annotated[timedelta | None, BeforeValidator(_seconds)]
CommaList = Annotated[tuple[str, ...], NoDecode, BeforeValidator(_comma_list)]
PositiveSeconds = Annotated[float, BeforeValidator(_positive_seconds)]


class Settings(BaseSettings):
    """The validated configuration. Build it with `load_settings`, which gathers the sources."""

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX,
        env_ignore_empty=True,  # `DA_X=` means the default, as an unset variable does
        frozen=True,
        extra="forbid",
        validate_by_name=True,
        use_attribute_docstrings=True,
    )

    config_file: Path | None = None
    """A TOML file with a [durable_agents] section and [models.*] / [shields.*] tables."""
    data_dir: Path = Path(".data")
    """Where `make run` keeps the dev server's and the store's SQLite files (`temporal.db`, `store.db`) and the
    generated credentials key; its `wake/` holds the sockets by which writers on this host wake the API's streams."""
    store_url: str = Field(default="", validate_default=True)
    """SQLAlchemy async URL of the store, e.g. `postgresql+asyncpg://user:password@host/db`; unset: `store.db` in
    the data dir (SQLite: one machine only)."""
    task_queue: str = "durable-agents"
    """Temporal task queue of the worker."""
    temporal_address: str | None = Field(default=None, validation_alias="TEMPORAL_ADDRESS")
    """Temporal frontend host:port; unset: the profile's, else the local dev server."""
    temporal_profile: str | None = Field(default=None, validation_alias="TEMPORAL_PROFILE")
    """Profile of temporalio's envconfig file to connect with."""
    temporal_config_file: str | None = Field(default=None, validation_alias="TEMPORAL_CONFIG_FILE")
    """temporalio's envconfig TOML file."""
    models: Annotated[dict[str, ModelSpec], NoDecode] = Field(default_factory=dict)
    """Model id → how to reach it; with `offline_model`, `offline/echo` too."""
    shields: Annotated[dict[str, ShieldSpec], NoDecode] = Field(default_factory=dict)
    """Shield id → its spec, for agents' input_shields / output_shields."""
    awaiting_input_timeout: Seconds = None
    """How long a paused turn waits for client tool results before it ends `expired` (a late resume gets 410);
    unset or 0: forever."""
    continue_as_new_after_events: PositiveInt = Field(default=4000, validation_alias="DA_CONTINUE_AS_NEW_EVENTS")
    """History length (events) at which a long turn continues as a new workflow run, which reloads its steps from
    the store; Temporal allows 51,200 events per run."""
    api_host: str = "127.0.0.1"
    """Interface `make run` serves the API on."""
    api_port: Port = 8321
    """Port `make run` serves the API on."""
    temporal_port: Port = 7233
    """The embedded dev server's frontend port (and the default address's)."""
    temporal_ui_port: Port = 8233
    """The embedded dev server's web UI port."""
    api_keys: CommaList = Field(default=(), repr=False)
    """API keys, each `key` (a tenant of its own) or `tenant:key` (keys of one named tenant); when set, every route
    but health, readiness and metrics needs `Authorization: Bearer <key>`. Unset: no authentication, one tenant."""
    max_request_bytes: PositiveInt = DEFAULT_MAX_REQUEST_BYTES
    """Larger request bodies are refused with 413 before they are read."""
    max_message_bytes: PositiveInt = Field(default=1024 * 1024, le=MESSAGE_BYTES_CEILING)
    """The most one turn takes in: a create's messages (inline documents included), or a resume's tool results, in
    total (else 413). At most 1400000: tool results travel in one Temporal payload."""
    max_history_bytes: PositiveInt = 1024 * 1024
    """How much of a session's earlier turns (their stored JSON) one model call is given: the newest turns that fit,
    oldest first; the current turn is always whole. Set it to what your model's context holds."""
    response_wait: PositiveSeconds = 600.0
    """How long a non-streamed, non-background `POST /v1/responses` waits for its response to end before it
    answers with the response as it stands (`in_progress`; GET it later)."""
    max_tool_output_chars: PositiveInt = 256 * 1024
    """Tool results (server or client) longer than this are cut, with a marker saying how much."""
    worker_in_api: Flag = False
    """The API process also runs a worker and starts turns on it eagerly: the first workflow task
    comes back in the start call's reply. `serve.py` (`make run`) turns it on unless it is set."""
    max_cached_workflows: int = Field(default=1000, ge=0)
    """Workflows (turns, mostly) a worker keeps in memory between their workflow tasks, the least recently run
    evicted first: it bounds a worker's memory however many turns wait. A turn not kept replays its history when
    it next runs (a resume after a long pause), which costs a few milliseconds; 0: none kept."""
    early_model_calls: Flag = True
    """With the worker in the API: a foreground response's first model call begins as soon as the response is
    recorded, while its workflow starts, and its inference activity adopts the call in flight; false: the
    activity alone makes it (docs/design.md, "A foreground response's first model call")."""
    unstarted_turn_sweep: Seconds = timedelta(seconds=30)
    """How often each API process starts the workflows of turns a crash left recorded but unstarted (turns at
    least this old), and deletes what ended `store: false` responses left in the store; 0: never."""
    # Outbound requests a caller can steer (documents, MCP servers): see outbound/.
    outbound_allow: Annotated[tuple[str, ...], NoDecode, BeforeValidator(_outbound_allow)] = ()
    """Hosts, addresses or CIDR ranges (optionally `:port`) that outbound requests may reach even
    though they are loopback, private, link-local or the like."""
    outbound_connect_timeout: PositiveSeconds = 10.0
    """Seconds to resolve and connect, for documents and MCP servers."""
    outbound_read_timeout: PositiveSeconds = 30.0
    """Seconds between bytes of a reply, for documents and MCP servers."""
    max_document_bytes: PositiveInt = DEFAULT_MAX_DOCUMENT_BYTES
    """A larger URL document fails its turn; the download stops at the limit."""
    max_tool_reply_bytes: PositiveInt = DEFAULT_MAX_TOOL_REPLY_BYTES
    """Largest reply read from an MCP server; a larger one fails the call while it streams in."""
    tool_call_deadline: PositiveSeconds = 60.0
    """Seconds one MCP tool call may take in all, connecting and retries included; then the model gets a
    tool error saying so and the turn goes on."""
    tools_listing_deadline: PositiveSeconds = 10.0
    """Seconds one MCP server may take to list its tools (`GET /v1/tools`, resolving a turn's tools)."""
    mcp_headers: Annotated[dict[str, dict[str, str]], NoDecode, BeforeValidator(_headers_by_url)] = Field(
        default_factory=dict, repr=False
    )
    """MCP endpoint URL → headers sent with every request to it, e.g. `{"https://mcp.example/mcp":
    {"Authorization": "Bearer …"}}`; never stored or shown."""
    credentials_key: str | None = Field(default=None, repr=False)
    """Fernet key that encrypts the MCP headers a turn's request brings while the turn runs; every API and worker
    needs the same one. Unset: requests with such headers are refused (`make run` generates one into the data
    dir)."""
    # Web search (docs/tools-and-shields.md#web-search): none by default; every request through the outbound policy.
    web_search_engine: Literal["searxng", "brave", "tavily"] | None = None
    """The backend of the web search tool (llama-stack `builtin::websearch`, Responses `web_search`); unset: the
    tool is refused with a 400 naming this setting."""
    web_search_url: str | None = None
    """The engine's search endpoint: a SearxNG instance's `/search` URL (required for searxng, whose JSON format
    must be enabled); for brave and tavily, a different endpoint than their public API's (a proxy)."""
    web_search_api_key: str | None = Field(default=None, repr=False)
    """The Brave Search subscription token or the Tavily API key (required for those); never stored or shown."""
    web_search_max_results: int = Field(default=5, ge=1, le=20)
    """The most results one search gives the model."""
    web_search_max_reply_bytes: PositiveInt = 1024 * 1024
    """Largest reply read from the search engine; a larger one fails the search while it streams in."""
    # Tenancy and limits (docs/security.md, docs/limits.md). Open-stream counters are per API process;
    # rate buckets are shared by every API process on PostgreSQL.
    api_keys_file: Path | None = None
    """More API key entries, one `key` or `tenant:key` a line; `#` starts a comment line."""
    offline_model: Flag = False
    """Whether agents may name the built-in `offline/echo` model (no LLM); unset: only when no models are
    configured."""
    page_limit_default: PositiveInt = 100
    """Items a list route returns when the caller gives no `limit`."""
    page_limit_max: PositiveInt = 1000
    """The most items a list route returns at once."""
    rate_limit_per_minute: LimitOrOff = 1200
    """Requests per API key and minute, sustained (token bucket; shared by every API process on a PostgreSQL store,
    per process on SQLite); over it: 429 with `Retry-After`; 0: no limit. Only callers with an API key are
    counted: without configured keys nothing is rate-limited."""
    rate_limit_burst: PositiveInt = 200
    """Requests per API key served at once before the sustained rate applies (with API keys only)."""
    max_streams_per_key: PositiveInt = 50
    """Open SSE streams per API key, per API process; one more is 429 before anything starts."""
    max_infer_iters: PositiveInt = 100
    """The largest `max_infer_iters` an agent may ask for."""
    max_sessions_per_agent: PositiveInt = 10000
    """Sessions one agent may have."""
    max_turns_per_session: PositiveInt = 10000
    """Turns one session may have."""
    max_toolgroups_per_tenant: PositiveInt = 100
    """Toolgroups one tenant may register."""
    max_agents_per_tenant: PositiveInt = 10_000
    """Saved agents one tenant may have, in each dialect (llama-stack agents, Agents API agents)."""
    max_sessions_per_tenant: PositiveInt = 100_000
    """Agents API sessions one tenant may have: far above what one machine holds waiting (docs/limits.md)."""
    max_automations_per_tenant: PositiveInt = 1_000
    """Agents API automations one tenant may have; each is a Temporal Schedule the cluster keeps and runs."""
    allowed_hosts: Annotated[tuple[str, ...] | None, NoDecode, BeforeValidator(_comma_list_or_unset)] = None
    """Host header names served (`*`: any), others 403; unset: loopback names only without API keys, any with them."""
    allowed_origins: CommaList = ()
    """Browser origins (scheme://host[:port]) allowed besides the API's own; other `Origin`s get 403."""
    log_format: LogFormat = "text"
    """`json`: every log line is one JSON object, for log shippers."""
    worker_metrics_host: str = "127.0.0.1"
    """Interface worker.py serves its Prometheus metrics on."""
    worker_metrics_port: PortOrZero = 0
    """Port worker.py serves Prometheus metrics on (the Temporal SDK's and ours); 0: not served."""
    compact_threshold: PositiveInt | None = None
    """Estimated tokens (characters / 4) of context above which a new Responses turn first has the model
    summarise its prior context (docs/long-conversations.md); a request's `context_management` overrides it.
    Unset: only requests with `context_management` compact."""
    retention: Annotated[dict[str, timedelta], NoDecode, BeforeValidator(_retention)] = Field(default_factory=dict)
    """Time-to-live by kind, `kind=seconds,…` (kinds: responses, conversations, sessions, turns, compactions,
    webhook_deliveries, files, vector_stores; docs/retention.md); a Temporal Schedule deletes what is older,
    with the TTLs of the worker that runs it. Empty: everything is kept (but the webhook delivery log, and
    what has its own `expires_after`)."""
    retention_period: PositiveSeconds = 3600.0
    """Seconds between two retention sweeps (the Schedule's interval)."""
    retention_batch: PositiveInt = 500
    """Rows one retention or erasure transaction deletes at most."""
    automation_catchup_window: PositiveSeconds = Field(default=3600.0, ge=10)
    """Seconds after its time within which an Agents API automation's occurrence missed while Temporal was down
    still runs when it is back: once, however many fell in the window; older ones are skipped
    (docs/agents-spend-and-automations.md). Temporal's minimum is 10."""
    operator_key: str | None = Field(default=None, repr=False)
    """Bearer token of the operator routes (`/v1/operator/…`: erase a tenant); unset: those routes are off."""
    session_compact_threshold: PositiveInt | None = None
    """Estimated tokens of context above which a new llama-stack turn first has the model summarise its
    session's earlier turns, which are then read as that summary instead of being dropped; unset: never."""
    # Webhooks (docs/webhooks.md).
    webhook_retry_delays: Annotated[tuple[float, ...], NoDecode, BeforeValidator(_seconds_list)] = WEBHOOK_RETRY_DELAYS
    """Seconds to wait before each retry of a webhook delivery the receiver did not accept, comma-separated;
    after the last, the delivery has failed. The default reaches about 72 hours."""
    webhook_timeout: PositiveSeconds = Field(default=10.0, le=300)
    """Seconds one webhook attempt may take, connecting included, before it counts as failed."""
    max_webhook_endpoints_per_tenant: PositiveInt = 20
    """Webhook endpoints one tenant may have."""
    webhook_sweep_interval: PositiveSeconds = 30.0
    """How often each API process starts delivery workflows that a crash left unstarted (and once at start)."""
    compaction_retention: PositiveSeconds = 7 * 24 * 3600.0
    """Seconds a `/responses/compact` record (the summary, or the messages of one that never finished) is kept:
    the client holds the summary in its sealed item, so the record is only a log; `compactions` in DA_RETENTION
    overrides it."""
    webhook_log_retention: PositiveSeconds = 30 * 24 * 3600.0
    """Seconds webhook events, their deliveries and attempts are kept (the delivery log) once none is pending;
    `webhook_deliveries` in DA_RETENTION overrides it."""
    # Knowledge: files, vector stores, embeddings (docs/knowledge.md).
    default_embedding_model: str = BUILTIN_EMBEDDING_MODEL_ID
    """The embedding model of a vector store whose creator names none: the built-in one, or the id of a
    configured model with `model_type` `embedding`."""
    blob_dir: Path | None = None
    """Where a SQLite store keeps uploaded files' bytes; unset: `files/` beside the store's database file
    (a PostgreSQL store keeps them in the database)."""
    max_file_bytes: PositiveInt = 512 * 1024 * 1024
    """The largest file `POST /v1/files` takes (else 413); the request limit of the JSON routes does not apply."""
    max_files_per_vector_store: PositiveInt = 10000
    """Files one vector store may have attached."""
    max_chunks_per_vector_store: PositiveInt = 5_000_000
    """Chunks one vector store may hold; a file that would pass it fails with a `last_error` saying so."""
    max_files_per_tenant: PositiveInt = 100_000
    """Files one tenant may have (uploads and `rag-tool/insert` documents); past it an upload answers 400."""
    max_file_bytes_per_tenant: PositiveInt = 1024**4
    """Bytes one tenant's files may hold together (default 1 TiB: a quota for shared servers, not a disk guard)."""
    max_vector_stores_per_tenant: PositiveInt = 10_000
    """Vector stores (llama-stack vector DBs included) one tenant may have; past it a create answers 400."""
    max_extracted_characters: PositiveInt = 20_000_000
    """Characters of text one file may yield (what a worker holds of an HTML, JSON or PDF file while it chunks it;
    a text file streams); a file with more fails with a `last_error` naming this setting."""
    max_pdf_pages: PositiveInt = 2_000
    """Pages one PDF may have to be ingested; a longer one fails with a `last_error` naming this setting."""
    max_search_results: PositiveInt = 50
    """The largest `max_num_results` a vector store search may ask for."""
    vector_cache_mb: int = Field(default=256, ge=0)
    """Memory each process may keep SQLite vector stores' vectors in, for searches scored by numpy instead of a
    sqlite-vec scan; least recently searched stores leave first, a store larger than it is scanned; 0: none."""
    ingestion_batch_size: PositiveInt = 128
    """Chunks embedded and written per transaction while a file is ingested."""
    ingestion_sweep: Seconds = timedelta(seconds=30)
    """How often each API process (and once at its start) starts the ingestion of files a crash left attached
    `in_progress` with no workflow (files at least this old); 0: never."""

    # The code sandbox (docs/code-sandbox.md): every limit applies to one call (a cell, a command).
    sandbox_cpu_seconds: PositiveSeconds = 60.0
    """CPU seconds one sandboxed call may use, all its processes and threads together; then it is killed."""
    sandbox_wall_seconds: PositiveSeconds = 120.0
    """Seconds one sandboxed call may take; then its processes are killed (a kernel is restarted)."""
    sandbox_memory_mb: PositiveInt = 1024
    """Memory one container's processes may hold (a cgroup where one is writable, else each process's address
    space); past it the kernel kills them (a kernel is restarted)."""
    sandbox_workspace_mb: PositiveInt = 1024
    """Bytes of disk a container's `/workspace` may hold; a call that grows it past this is killed."""
    sandbox_file_size_mb: PositiveInt = 256
    """The largest file a sandboxed process may write (a longer write fails with 'File too large')."""
    sandbox_max_processes: PositiveInt = 64
    """Processes and threads one container may run at once (a pids cgroup where one is writable)."""
    sandbox_output_bytes: PositiveInt = 64 * 1024
    """Bytes of stdout and of stderr kept per call; the rest is dropped and the output marked truncated."""
    sandbox_python_env: Path | None = None
    """The sandbox's own Python environment (numpy, pandas, matplotlib), mounted read-only inside it; unset:
    `.venv-sandbox` beside the code, which `make run` and `make test` build."""
    max_containers_per_tenant: PositiveInt = 20
    """Live containers (Containers API and `code_interpreter` / `shell` auto containers) one tenant may hold."""
    container_idle_minutes: PositiveInt = 20
    """A container's `expires_after.minutes` when the request names none: it is deleted, files and all, after
    this long without a call or a file change."""
    max_websockets_per_key: PositiveInt = 16
    """Open Responses WebSocket connections per API key, per API process; one more is refused (429) at the
    upgrade."""
    max_websocket_message_bytes: PositiveInt = DEFAULT_MAX_REQUEST_BYTES
    """The largest client event a Responses WebSocket takes; a larger one is answered with an `error` event."""
    max_websocket_lanes: PositiveInt = 32
    """Distinct named `stream_id` lanes one Responses WebSocket connection may use."""

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """Only what `load_settings` gathered: an explicit environment must not mix with os.environ."""
        return (init_settings,)

    @field_validator("data_dir")
    @classmethod
    def _absolute(cls, data_dir: Path) -> Path:
        return data_dir.resolve()

    @field_validator("store_url")
    @classmethod
    def _store_in_data_dir(cls, store_url: str, info: ValidationInfo) -> str:
        if store_url or "data_dir" not in info.data:
            return store_url
        return f"sqlite+aiosqlite:///{info.data['data_dir'] / 'store.db'}"

    @model_validator(mode="before")
    @classmethod
    def _with_offline_model(cls, values: dict[str, Any]) -> dict[str, Any]:
        """The offline model is offered when asked for, and by default only when no model is configured:
        a deployment's agents must not land on a model that is no LLM by mistake."""
        models = values.get("models") or {}
        try:
            offered = _flag(values["offline_model"]) if values.get("offline_model") is not None else not models
        except ValueError:
            return values  # the field's own validation names the variable
        if not isinstance(models, dict):
            return values
        extra = {OFFLINE_MODEL_ID: ModelSpec(provider="offline")} if offered else {}
        return {**values, "offline_model": offered, "models": {**extra, **models}}

    @field_validator("credentials_key")
    @classmethod
    def _fernet_key(cls, key: str | None) -> str | None:
        if key is not None:
            try:
                Fernet(key)
            except ValueError:
                raise ValueError(
                    "must be a Fernet key (32 url-safe base64-encoded bytes), e.g. from "
                    '`python -c "from cryptography.fernet import Fernet; print(Fernet.generate_key().decode())"`'
                ) from None
        return key

    @field_validator("api_keys_file")
    @classmethod
    def _readable(cls, path: Path | None) -> Path | None:
        if path is not None and not path.is_file():
            raise ValueError(f"must name a readable file of API key entries; {path} is not one")
        return path

    @model_validator(mode="after")
    def _embedding_model_exists(self) -> Settings:
        chosen = self.models.get(self.default_embedding_model)
        if self.default_embedding_model != BUILTIN_EMBEDDING_MODEL_ID and (
            chosen is None or chosen.model_type != "embedding"
        ):
            raise ValueError(
                f"default_embedding_model {self.default_embedding_model!r} is neither the built-in "
                f"{BUILTIN_EMBEDDING_MODEL_ID} nor a configured model with model_type 'embedding'"
            )
        return self

    @model_validator(mode="after")
    def _web_search_complete(self) -> Settings:
        engine = self.web_search_engine
        if engine == "searxng" and not self.web_search_url:
            raise ValueError("DA_WEB_SEARCH_ENGINE=searxng needs DA_WEB_SEARCH_URL, the instance's /search URL")
        if engine in ("brave", "tavily") and not self.web_search_api_key:
            raise ValueError(f"DA_WEB_SEARCH_ENGINE={engine} needs DA_WEB_SEARCH_API_KEY")
        if self.web_search_url is not None and urlsplit(self.web_search_url).scheme not in ("http", "https"):
            raise ValueError(f"DA_WEB_SEARCH_URL must be an http(s) URL, got {self.web_search_url!r}")
        return self

    @model_validator(mode="after")
    def _guard_models_exist(self) -> Settings:
        for shield_id, shield in self.shields.items():
            if shield.provider == "llama_guard" and shield.model not in self.models:
                raise ValueError(
                    f"shield {shield_id!r} names model {shield.model!r}, which is not configured; "
                    f"add it to DA_MODELS or the config file's [models] (configured: {sorted(self.models)})"
                )
        return self

    def model(self, model_id: str) -> ModelSpec | None:
        """The chat model of that id; None for an unknown id or an embedding model."""
        spec = self.models.get(model_id)
        return spec if spec is not None and spec.model_type == "llm" else None

    def key_entries(self) -> tuple[str, ...]:
        """The API key entries of `api_keys` and of `api_keys_file`."""
        if self.api_keys_file is None:
            return self.api_keys
        try:
            lines = self.api_keys_file.read_text().splitlines()
        except OSError as exc:
            raise SettingsError(f"DA_API_KEYS_FILE {self.api_keys_file} cannot be read: {exc.strerror}") from None
        return self.api_keys + tuple(
            line.strip() for line in lines if line.strip() and not line.strip().startswith("#")
        )
