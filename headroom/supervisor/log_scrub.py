"""Secret values scrubbed out of the per-run log, in place.

vLLM writes its own output to the per-run log (Headroom never pipes it: a full pipe would
block vLLM), and it prints its non-default arguments at start-up, an --api-key among them.
Headroom knows the secret values it launched with, so it overwrites each occurrence with
as many "*" in the file, at the same offsets: vLLM only ever appends, so the bytes it writes
next are never touched, and the file's length never changes. The log stays 0600 besides.
Values shorter than 8 characters are not searched for (they would match ordinary text).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from headroom.vllm_cmd.secrets import searchable

STEP_BYTES = 4 << 20  # per call, like the tail: a log flood costs bounded work per tick


class LogScrubber:
    """Overwrites the secret values in one log file, a step at a time, from the start."""

    def __init__(self, path: Path, values: Sequence[str]) -> None:
        self.path = path
        self.needles = sorted(
            {v.encode("utf-8") for v in values if searchable(v)},
            key=len,
            reverse=True,
        )
        self.offset = 0  # everything before this has been scrubbed
        self.scrubbed = 0  # occurrences overwritten (for tests and notices)

    def scrub(self, *, final: bool = False) -> int:
        """Scrub what was written since the last call (all of it when final); returns how
        many occurrences were overwritten. Never raises (a missing file is nothing to do)."""
        if not self.needles:
            return 0
        done = 0
        try:
            fd = os.open(self.path, os.O_RDWR)
        except OSError:
            return 0
        try:
            while True:
                found, more = self._step(fd)
                done += found
                if not (final and more):
                    break
        except OSError:
            pass
        finally:
            os.close(fd)
        self.scrubbed += done
        return done

    def _step(self, fd: int) -> tuple[int, bool]:
        size = os.fstat(fd).st_size
        if size <= self.offset:
            return 0, False
        longest = len(self.needles[0])
        # A step always moves past what it keeps for next time (the longest value, less one).
        end = min(size, self.offset + max(STEP_BYTES, 2 * longest))
        block = os.pread(fd, end - self.offset, self.offset)
        found = 0
        for needle in self.needles:
            start = block.find(needle)
            while start != -1:
                stars = b"*" * len(needle)
                os.pwrite(fd, stars, self.offset + start)
                block = block[:start] + stars + block[start + len(needle) :]
                found += 1
                start = block.find(needle, start + len(needle))
        # Keep the last (longest - 1) bytes for next time: a value may be cut at `end`,
        # its rest not written yet.
        self.offset = max(self.offset, end - (longest - 1))
        return found, end < size
