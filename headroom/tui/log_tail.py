"""Follow a growing log file without blocking the UI: each `read_new()` returns the complete
lines appended since the last call. A file that shrinks (rotated or truncated by a restart)
is read again from the start."""

from __future__ import annotations

import os
from pathlib import Path

MAX_READ = 1 << 20  # at most 1 MiB per call, so a huge backlog cannot stall one poll


class FileTail:
    """Incremental reader of one text file."""

    def __init__(self, path: str | os.PathLike[str], *, from_start: bool = True) -> None:
        self.path = Path(path)
        self._offset = 0 if from_start else self._size()
        self._partial = b""

    def _size(self) -> int:
        try:
            return self.path.stat().st_size
        except OSError:
            return 0

    def read_new(self) -> list[str]:
        size = self._size()
        if size < self._offset:  # truncated or replaced: start again
            self._offset, self._partial = 0, b""
        if size == self._offset:
            return []
        try:
            with self.path.open("rb") as handle:
                handle.seek(self._offset)
                chunk = handle.read(MAX_READ)
        except OSError:
            return []
        self._offset += len(chunk)
        data = self._partial + chunk
        *complete, self._partial = data.split(b"\n")
        return [line.decode("utf-8", "replace").rstrip("\r") for line in complete]
