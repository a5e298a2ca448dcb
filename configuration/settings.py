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

from datetime import timedelta
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from cryptography.fernet import Fernet
from pydantic import BeforeValidator, Field, ValidationInfo, field_validator, model_validator
from pydantic_settings import (
    BaseSettings,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

from configuration.model_specs import BUILTIN_EMBEDDING_MODEL_ID, ModelSpec, ShieldSpec
from configuration.values import (
    WEBHOOK_RETRY_DELAYS,
    CommaList,
    Flag,
    LimitOrOff,
    LogFormat,
    Port,
    PortOrZero,
    PositiveInt,
    PositiveSeconds,
    Seconds,
    parse_comma_list_or_unset,
    parse_flag,
    parse_headers_by_url,
    parse_outbound_allow,
    parse_retention,
    parse_seconds_list,
)

OFFLINE_MODEL_ID = "offline/echo"
DEFAULT_MAX_DOCUMENT_BYTES = 1024 * 1024
DEFAULT_MAX_TOOL_REPLY_BYTES = 8 * 1024 * 1024
DEFAULT_MAX_REQUEST_BYTES = 1024 * 1024
MESSAGE_BYTES_CEILING = 1_400_000
"""Client tool results travel in a Temporal update (payloads up to 2 MB): one turn's input stays under this."""
ENV_PREFIX = "DA_"
FILE_SECTION = "durable_agents"


class SettingsError(ValueError):
    """A configuration value is wrong; the message says which and how to fix it."""


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
    approval_timeout: Seconds = None
    """How long an MCP approval may wait undecided before the turn denies it on its own (decided by `system`,
    "approval timed out"); a request's `approval_timeout` may shorten it, never lengthen it. Unset or 0: forever."""
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
    temporal_ui_url: str = "http://127.0.0.1:8233"
    """The Temporal Web UI the console links each turn's workflow to (`<url>/namespaces/<ns>/workflows/<id>`); the
    default is the embedded dev server's."""
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
    outbound_allow: Annotated[tuple[str, ...], NoDecode, BeforeValidator(parse_outbound_allow)] = ()
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
    mcp_headers: Annotated[dict[str, dict[str, str]], NoDecode, BeforeValidator(parse_headers_by_url)] = Field(
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
    allowed_hosts: Annotated[tuple[str, ...] | None, NoDecode, BeforeValidator(parse_comma_list_or_unset)] = None
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
    retention: Annotated[dict[str, timedelta], NoDecode, BeforeValidator(parse_retention)] = Field(default_factory=dict)
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
    webhook_retry_delays: Annotated[tuple[float, ...], NoDecode, BeforeValidator(parse_seconds_list)] = (
        WEBHOOK_RETRY_DELAYS
    )
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
    worker_host: str | None = Field(default=None, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
    """The id of this worker's host, which holds the workspaces and kernels of the containers it first ran a call
    for; the worker also polls `<task_queue>-host-<id>`, where those containers' calls are sent. Unset: the
    machine's host name. Keep it stable across restarts; each worker process may have its own, over one data
    directory, to keep each container's kernel in one process (docs/code-sandbox.md)."""
    code_host_start_timeout: PositiveSeconds = 60.0
    """Seconds a container's call waits for a worker of the host holding the container to take it; then the model
    gets a tool error saying the host is gone (nothing ran) and the turn goes on."""
    max_containers_per_tenant: PositiveInt = 20
    """Live containers (Containers API and `code_interpreter` / `shell` auto containers) one tenant may hold."""
    container_idle_minutes: PositiveInt = 20
    """A container's `expires_after.minutes` when the request names none: it is deleted, files and all, after
    this long without a call or a file change."""
    max_websockets_per_key: PositiveInt = 256
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
            offered = parse_flag(values["offline_model"]) if values.get("offline_model") is not None else not models
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
