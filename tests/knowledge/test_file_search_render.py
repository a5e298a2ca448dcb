"""Citation markers in a streamed answer: never shown in a delta, even split across deltas; each becomes a
`file_citation` annotation at the position where it stood, and the stream's events are the SDK's."""

from __future__ import annotations

from typing import Any

from openai import omit
from openai.lib.streaming.responses._responses import ResponseStreamState
from openai.types.responses import ResponseStreamEvent
from pydantic import TypeAdapter

from api.openai.responses.file_search import cited
from api.openai.responses.items import render_response
from api.openai.responses.stream import render_stream
from domain.content import CompletionMessage, ToolCall, ToolResponse
from tests.responses.test_responses_render import Turnlog, base

sdk_events: TypeAdapter[Any] = TypeAdapter(ResponseStreamEvent)
MARKER = "【file-abc123†handbook.txt】"
ANSWER = f"Drills are on Tuesdays{MARKER}. Bread on Fridays【file-def456†galley.md】."


SEARCHED = {"file-abc123", "file-def456"}


def _searched(log: Turnlog) -> None:
    """A file_search step that returned both files (its answer carries their markers)."""
    call = ToolCall(call_id="c1", tool_name="file_search", arguments={"query": "drills"})
    answer = "file_search found 2 passages:\n【file-abc123†handbook.txt】 Drills.\n【file-def456†galley.md】 Bread."
    log.tool_step(
        "s0",
        [call],
        [
            ToolResponse(
                call_id="c1",
                tool_name="file_search",
                content=answer,
                metadata={"file_search": {"queries": ["drills"], "status": "completed"}},
            )
        ],
    )


def test_cited_takes_markers_out_and_places_annotations_where_they_stood() -> None:
    text, annotations = cited(ANSWER, SEARCHED)
    assert text == "Drills are on Tuesdays. Bread on Fridays."
    assert [(a["file_id"], a["filename"], a["index"]) for a in annotations] == [
        ("file-abc123", "handbook.txt", len("Drills are on Tuesdays")),
        ("file-def456", "galley.md", len("Drills are on Tuesdays. Bread on Fridays")),
    ]
    assert cited("a 【not a marker】 b", SEARCHED) == ("a 【not a marker】 b", [])


def test_only_markers_of_searched_sources_are_cited() -> None:
    invented = "Drills【file-zzz999†secret.txt】 and chunks【handbook†handbook】."
    assert cited(invented, SEARCHED) == (invented, [])  # no citation of a file no search found
    assert cited(invented, {"handbook"}) == ("Drills【file-zzz999†secret.txt】 and chunks.", [])


def test_a_marker_split_across_deltas_never_shows_and_the_stream_matches_the_final_text() -> None:
    log = Turnlog()
    _searched(log)
    log.inference_start("s1")
    pieces = [
        "Drills are on Tues",
        "days【file-ab",
        "c123†hand",
        "book.txt】. Bread on Fridays【fi",
        "le-def456†galley.md】.",
    ]
    assert "".join(pieces) == ANSWER
    log.text("s1", *pieces)
    log.inference("s1", ANSWER)
    log.complete(CompletionMessage(content=ANSWER))
    events = [event.model_dump(mode="json") for event in render_stream(base(), "turn-1", log.bodies)]
    deltas = [event["delta"] for event in events if event["type"] == "response.output_text.delta"]
    assert all("【" not in delta and "】" not in delta for delta in deltas)
    assert "".join(deltas) == "Drills are on Tuesdays. Bread on Fridays."
    added = [event for event in events if event["type"] == "response.output_text.annotation.added"]
    assert [event["annotation_index"] for event in added] == [0, 1]
    done = next(event for event in events if event["type"] == "response.output_text.done")
    assert events.index(added[-1]) < events.index(done)
    # The SDK's own stream state accepts every event, and the final response carries the annotations.
    state = ResponseStreamState(input_tools=omit, text_format=omit)
    for event in events:
        state.handle_event(sdk_events.validate_python(event))
    final = render_response(base(), "turn-1", log.bodies)
    part = final.output[1].content[0]  # after the file_search_call
    assert part.text == "Drills are on Tuesdays. Bread on Fridays."
    assert [a["file_id"] for a in part.annotations] == ["file-abc123", "file-def456"]
