"""Run a command that dies with the process that started it: `python -S die_with_parent.py PID COMMAND...`.

serve.py starts each child through this file. On Linux it asks the kernel (`prctl(PR_SET_PDEATHSIG)`)
to SIGKILL the process when its parent dies, however the parent dies (a `kill -9`, the OOM killer),
then replaces itself with the command: exec keeps the setting, and the pid is the command's. Doing it
here rather than in subprocess's `preexec_fn` keeps it out of a forked copy of serve.py, where any
other thread's locks (the Temporal client's runtime has threads) may be held forever.

Elsewhere the command runs without it; serve.py's pidfile (hosting/supervision.py) then lets the next
start stop what an earlier one left running.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys

PR_SET_PDEATHSIG = 1


def main(argv: list[str]) -> None:
    parent, command = int(argv[1]), argv[2:]
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
            print(f"die_with_parent: prctl failed: {os.strerror(ctypes.get_errno())}", file=sys.stderr)
        elif os.getppid() != parent:  # the parent died before the setting was made: nothing would signal
            sys.exit(f"die_with_parent: the parent (pid {parent}) is gone; not starting {command[0]}")
    os.execvp(command[0], command)


if __name__ == "__main__":
    main(sys.argv)
