"""Writing a file whole, for every command and chart: a reader sees the earlier file or the new
one, never half of one."""

from __future__ import annotations

import json
import os
from pathlib import Path


def write_atomic(path: Path, data: str | bytes) -> None:
    """Writes `data` (text as UTF-8) to `path`, creating its folder: under a temporary name
    beside it (.NAME.PID.tmp), then renamed over it. A failure leaves the earlier file as it
    was, and the temporary file is removed either way."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        if isinstance(data, bytes):
            tmp.write_bytes(data)
        else:
            tmp.write_text(data, encoding="utf-8")
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def write_json_atomic(path: Path, data: object) -> None:
    """`data` as JSON (indented by one, a final newline), written as write_atomic writes."""
    write_atomic(path, json.dumps(data, indent=1) + "\n")
