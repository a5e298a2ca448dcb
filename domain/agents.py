"""Agent configuration: model, instructions, tools and limits."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator, model_validator

from domain.content import WireModel
from domain.turn_settings import FunctionTool, TurnSettings

PARAMETER_TYPES: dict[str, str] = {
    "str": "string",
    "string": "string",
    "int": "integer",
    "integer": "integer",
    "float": "number",
    "number": "number",
    "bool": "boolean",
    "boolean": "boolean",
    "list": "array",
    "array": "array",
    "dict": "object",
    "object": "object",
}
"""Python type names (what the client's @client_tool sends) and JSON Schema names → JSON Schema."""


class GreedyStrategy(WireModel):
    type: Literal["greedy"] = "greedy"


class TopPStrategy(WireModel):
    type: Literal["top_p"] = "top_p"
    temperature: float | None = Field(default=None, ge=0)
    top_p: float | None = Field(default=0.95, gt=0, le=1)


class TopKStrategy(WireModel):
    type: Literal["top_k"] = "top_k"
    top_k: int = Field(ge=1)


SamplingStrategy = Annotated[GreedyStrategy | TopPStrategy | TopKStrategy, Field(discriminator="type")]


class SamplingParams(WireModel):
    strategy: SamplingStrategy = Field(default_factory=GreedyStrategy)
    max_tokens: int | None = Field(default=0, ge=0)
    repetition_penalty: float | None = 1.0
    stop: list[str] | None = None


class ToolConfig(WireModel):
    tool_choice: str | None = "auto"
    """"auto", "required", "none", or the name of one tool the model must call."""
    tool_prompt_format: Literal["json", "function_tag", "python_list"] | None = None
    system_message_behavior: Literal["append", "replace"] | None = "append"


class ToolParameter(WireModel):
    name: str = Field(min_length=1)
    parameter_type: str
    description: str = ""
    required: bool = True
    default: Any = None

    @field_validator("parameter_type")
    @classmethod
    def _known_type(cls, value: str) -> str:
        if value not in PARAMETER_TYPES:
            known = ", ".join(sorted(PARAMETER_TYPES))
            raise ValueError(f"unknown parameter_type {value!r}; use one of: {known}")
        return value


class ToolDef(WireModel):
    name: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.:-]+$")
    description: str | None = None
    parameters: list[ToolParameter] | None = None
    metadata: dict[str, Any] | None = None

    @field_validator("parameters")
    @classmethod
    def _unique_parameter_names(cls, value: list[ToolParameter] | None) -> list[ToolParameter] | None:
        names = [p.name for p in value or []]
        if len(names) != len(set(names)):
            raise ValueError(f"parameter names must be unique, got {names}")
        return value


class ToolGroupWithArgs(WireModel):
    name: str
    args: dict[str, Any] = Field(default_factory=dict)


AgentToolGroup = str | ToolGroupWithArgs


def toolgroup_name(group: AgentToolGroup) -> str:
    return group if isinstance(group, str) else group.name


class JsonSchemaResponseFormat(WireModel):
    type: Literal["json_schema"] = "json_schema"
    json_schema: dict[str, Any]


class GrammarResponseFormat(WireModel):
    type: Literal["grammar"] = "grammar"
    bnf: dict[str, Any]


ResponseFormat = Annotated[JsonSchemaResponseFormat | GrammarResponseFormat, Field(discriminator="type")]


class AgentConfig(WireModel):
    model: str = Field(min_length=1)
    instructions: str
    name: str | None = None
    sampling_params: SamplingParams | None = Field(default_factory=SamplingParams)
    input_shields: list[str] | None = Field(default_factory=list)
    output_shields: list[str] | None = Field(default_factory=list)
    toolgroups: list[AgentToolGroup] | None = Field(default_factory=list)
    client_tools: list[ToolDef] | None = Field(default_factory=list)
    tool_choice: str | None = Field(default=None, deprecated="use tool_config.tool_choice")
    tool_prompt_format: str | None = Field(default=None, deprecated="use tool_config.tool_prompt_format")
    tool_config: ToolConfig | None = None
    max_infer_iters: int | None = Field(default=10, ge=1)
    enable_session_persistence: bool | None = False
    response_format: ResponseFormat | None = None

    @model_validator(mode="after")
    def _normalise(self) -> AgentConfig:
        """Fold deprecated fields into tool_config and materialise defaults, as the reference does."""
        legacy_choice = self.__dict__.get("tool_choice")
        legacy_format = self.__dict__.get("tool_prompt_format")
        config = self.tool_config or ToolConfig()
        if legacy_choice is not None:
            if self.tool_config is not None and self.tool_config.tool_choice not in (None, legacy_choice):
                raise ValueError("tool_choice is deprecated. Use tool_choice in tool_config instead.")
            config.tool_choice = legacy_choice
        if legacy_format is not None:
            config.tool_prompt_format = legacy_format
        config.tool_choice = config.tool_choice or "auto"
        self.tool_config = config
        self.sampling_params = self.sampling_params or SamplingParams()
        self.input_shields = self.input_shields or []
        self.output_shields = self.output_shields or []
        self.toolgroups = self.toolgroups or []
        self.client_tools = self.client_tools or []
        self.max_infer_iters = self.max_infer_iters or 10
        names = [tool.name for tool in self.client_tools]
        if len(names) != len(set(names)):
            raise ValueError(f"client tool names must be unique, got {names}")
        named = config.tool_choice not in ("auto", "required", "none")
        if named and not self.toolgroups and config.tool_choice not in names:
            raise ValueError(
                f"tool_choice {config.tool_choice!r} names no tool of this agent; "
                f"use auto, required, none or one of {names}"
            )
        return self


class Agent(WireModel):
    agent_id: str
    agent_config: AgentConfig
    created_at: datetime


class Document(WireModel):
    content: Any
    mime_type: str


def function_tool(tool: ToolDef) -> FunctionTool:
    """A client tool as the runtime's function tool: its parameters become a JSON Schema object."""
    properties: dict[str, Any] = {}
    required: list[str] = []
    for parameter in tool.parameters or []:
        schema: dict[str, Any] = {"type": PARAMETER_TYPES[parameter.parameter_type]}
        if parameter.description:
            schema["description"] = parameter.description
        if parameter.default is not None:
            schema["default"] = parameter.default
        properties[parameter.name] = schema
        if parameter.required:
            required.append(parameter.name)
    parameters = {"type": "object", "properties": properties, "required": required}
    return FunctionTool(name=tool.name, description=tool.description or "", parameters=parameters)


def agent_turn_settings(config: AgentConfig, tool_config: ToolConfig) -> TurnSettings:
    """What an inference of a llama-stack turn reads: its agent's config, with the turn's `tool_config` (its own,
    or the agent's, as the workflow resolved it). Greedy sampling is temperature 0; top_k sets nothing; a
    grammar response format is not passed on."""
    params = config.sampling_params or SamplingParams()
    strategy = params.strategy
    temperature = top_p = None
    if isinstance(strategy, GreedyStrategy):
        temperature = 0.0
    elif isinstance(strategy, TopPStrategy):
        temperature, top_p = strategy.temperature, strategy.top_p
    fmt = config.response_format
    response_format = None
    if isinstance(fmt, JsonSchemaResponseFormat):
        response_format = {"type": "json_schema", "json_schema": {"name": "response", "schema": fmt.json_schema}}
    return TurnSettings(
        model=config.model,
        instructions=config.instructions,
        function_tools=[function_tool(tool) for tool in config.client_tools or []],
        tool_choice=tool_config.tool_choice or "auto",
        temperature=temperature,
        top_p=top_p,
        max_output_tokens=params.max_tokens or None,
        stop=params.stop or None,
        response_format=response_format,
    )
