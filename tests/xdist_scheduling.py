"""How `make test` spreads the suite over pytest-xdist workers (`--dist loadgroup`, with this scheduler):
by file, as `--dist loadfile` does, except that all files marked `xdist_group("<name>")` form one unit
that a single worker runs one file after another.

Why by file: each worker starts its own stack (tests/stack.py) once, and module-scoped fixtures (MCP
servers, process stacks) are paid once per file only if the whole file stays on one worker. Why the
groups: the process-heavy files start a Temporal dev server, a worker and an API of their own and kill
them; two of them at once on two cores stretch each other's start-ups past their timing margins.
"""

from __future__ import annotations

from xdist.scheduler import LoadGroupScheduling


class FilesAndGroups(LoadGroupScheduling):
    def _split_scope(self, nodeid: str) -> str:
        group = super()._split_scope(nodeid)  # the group's name, or the nodeid itself when ungrouped
        return group if group != nodeid else nodeid.split("::", 1)[0]
