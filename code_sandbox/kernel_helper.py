"""The Python kernel's side, run inside the sandbox by the sandbox's own Python (standard library only; the
worker never imports it).

It executes cells in one namespace kept for its whole life, like a Jupyter kernel: a request is one JSON
line on the requests pipe, `{"code", "marker", "max_chars"}`; the reply one JSON line on the replies pipe,
`{"result", "error", "images"}`: the last expression's repr, the exception with its traceback, and the
matplotlib figures left open, saved as PNGs under /workspace/figures. Output goes to the real stdout and
stderr (so a subprocess's output is caught too); after a cell the marker is written to both, so the worker
knows where this cell's output ends. The first reply, `{"ready": true}`, says the kernel is up.
"""

from __future__ import annotations

import ast
import builtins
import json
import linecache
import os
import sys
import traceback
import uuid
from types import TracebackType
from typing import Any, BinaryIO

FIGURES = "/workspace/figures"


def main() -> None:
    requests_fd, replies_fd = int(sys.argv[1]), int(sys.argv[2])
    for fd in (requests_fd, replies_fd):
        os.set_inheritable(fd, False)  # not for the processes a cell starts
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)  # input() gets EOF instead of reading the requests
    sys.stdin = open(os.devnull)  # noqa: SIM115  # the cell's stdin, open as long as the kernel
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]
    sys.stderr.reconfigure(line_buffering=True)  # type: ignore[union-attr]
    sys.path.insert(0, "/workspace")  # modules the code wrote are importable, as from a notebook's folder
    sys.argv = [""]
    namespace: dict[str, Any] = {"__name__": "__main__", "__builtins__": builtins}
    replies = os.fdopen(replies_fd, "wb", buffering=0)
    _reply(replies, {"ready": True})
    with os.fdopen(requests_fd, "rb") as requests:
        for number, line in enumerate(requests, start=1):
            request = json.loads(line)
            outcome = _run_cell(request["code"], f"<cell {number}>", namespace, request["max_chars"])
            sys.stdout.flush()
            sys.stderr.flush()
            marker = request["marker"].encode()
            os.write(1, marker)
            os.write(2, marker)
            _reply(replies, outcome)


def _reply(replies: BinaryIO, message: dict[str, Any]) -> None:
    replies.write(json.dumps(message).encode() + b"\n")


def _run_cell(code: str, filename: str, namespace: dict[str, Any], max_chars: int) -> dict[str, Any]:
    linecache.cache[filename] = (len(code), None, code.splitlines(keepends=True), filename)  # lines in tracebacks
    result, error = None, None
    try:
        tree = ast.parse(code, filename, "exec")
        last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
        exec(compile(tree, filename, "exec"), namespace)
        if isinstance(last, ast.Expr):
            value = eval(compile(ast.Expression(last.value), filename, "eval"), namespace)
            result = None if value is None else repr(value)[:max_chars]
    except BaseException as exc:  # SystemExit and KeyboardInterrupt end the cell, not the kernel
        error = {
            "name": type(exc).__name__,
            "value": str(exc)[:max_chars],
            "errno": exc.errno if isinstance(exc, OSError) else None,
            "traceback": "".join(traceback.format_exception(type(exc), exc, _cell_frames(exc.__traceback__)))[
                -max_chars:
            ],
        }
    return {"result": result, "error": error, "images": _save_figures()}


def _cell_frames(frames: TracebackType | None) -> TracebackType | None:
    """The traceback from the cell's first frame on: the kernel's own frames say nothing to the user."""
    while frames is not None and frames.tb_frame.f_code.co_filename == __file__:
        frames = frames.tb_next
    return frames


def _save_figures() -> list[str]:
    """Every open matplotlib figure saved as a PNG in the workspace, then closed (as a notebook shows them)."""
    pyplot = sys.modules.get("matplotlib.pyplot")
    if pyplot is None:
        return []
    saved = []
    try:
        for number in pyplot.get_fignums():
            os.makedirs(FIGURES, exist_ok=True)
            path = f"{FIGURES}/figure-{uuid.uuid4().hex[:12]}.png"
            pyplot.figure(number).savefig(path, format="png")
            saved.append(path)
    except Exception as exc:
        print(f"a figure could not be saved: {exc}", file=sys.stderr)
    finally:
        pyplot.close("all")
    return saved


if __name__ == "__main__":
    main()
