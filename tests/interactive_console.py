"""An interactive `python -m bot console` fed through a pipe, so a test can type a line while a
round, an approval or a task is under way, and stop the bot with a signal at a chosen moment."""

from __future__ import annotations

import codecs
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from tests.conftest import REPO


class InteractiveConsole:
    def __init__(self, config: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "bot", "console", "--config", str(config)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=REPO,
        )
        self.lines: list[str] = []
        self.pending = ""  # read, not yet split into lines
        self.decoder = codecs.getincrementaldecoder("utf-8")()  # a read may end inside a character

    def type(self, text: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(text + "\n")
        self.proc.stdin.flush()

    def wait_for(self, seen: str | Callable[[str], bool], timeout: float = 120) -> None:
        """Read output until a line starts with `seen`, or passes it when it is a test (at most
        `timeout` seconds, or the test fails). Read from the pipe itself: a buffered reader would
        hold lines that select() no longer reports."""
        passes = (lambda line: line.startswith(seen)) if isinstance(seen, str) else seen
        assert self.proc.stdout is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            while "\n" in self.pending:
                line, self.pending = self.pending.split("\n", 1)
                self.lines.append(line)
                if passes(line):
                    return
            ready, _, _ = select.select([self.proc.stdout], [], [], 1)
            if ready:
                self.pending += self.decoder.decode(os.read(self.proc.stdout.fileno(), 65536))
        self.proc.kill()
        raise AssertionError(f"never shown: {seen!r}; the output was:\n" + "\n".join(self.lines))

    def finish(self) -> str:
        """End of input: the bot finishes its work and exits; the whole transcript."""
        out, _ = self.proc.communicate(timeout=120)
        assert self.proc.returncode == 0
        return "\n".join([*self.lines, *(self.pending + out).splitlines()])

    def stop(self, signum: signal.Signals, timeout: float = 30) -> tuple[int, str, str]:
        """Send the signal (input stays open, as a person's terminal would); (exit code, the whole
        transcript, stderr) once the process has ended."""
        os.kill(self.proc.pid, signum)
        assert self.proc.stdout is not None and self.proc.stderr is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:  # drain stdout as it exits, so a full pipe never blocks it
            ready, _, _ = select.select([self.proc.stdout], [], [], 1)
            if ready:
                chunk = os.read(self.proc.stdout.fileno(), 65536)
                if not chunk:
                    break
                self.pending += self.decoder.decode(chunk)
        self.proc.wait(timeout=max(1.0, deadline - time.monotonic()))
        return self.proc.returncode, "\n".join([*self.lines, *self.pending.splitlines()]), self.proc.stderr.read()

    def kill(self) -> None:
        self.stop(signal.SIGKILL, timeout=10)
