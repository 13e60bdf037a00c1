"""The child process of `larkbot.lark.media.isolated`: one job as JSON on stdin, one answer on
stdout.

It imports the library the job needs, then caps its own address space (RLIMIT_AS) at its
resident size by then plus the job's memory budget. Resident memory never exceeds the address
space, so its peak stays within the budget over that baseline; a document or image that wants
more fails here (MemoryError, or the library's allocation error) instead of growing the server.
Answers: `{"ok": …}` or `{"error": reason}`, with `base` and `peak` (resident bytes).
"""

from __future__ import annotations

import importlib
import json
import math
import os
import resource
import sys
from pathlib import Path
from typing import Any

LIBRARIES = {
    ".pdf": "pypdf",
    ".docx": "docx",
    ".xlsx": "openpyxl",
    ".xlsm": "openpyxl",
    ".pptx": "pptx",
    ".html": "trafilatura",
    ".htm": "trafilatura",
}
NICENESS = 10  # on a busy machine the server (webhooks, /healthz) comes before parsing
NEAR_CAP = 64 * 1024 * 1024  # a failure this close to the cap is taken for running out


def status(field: str) -> int:
    """A `VmSize`/`VmRSS`/`VmHWM`/`VmPeak` line of /proc/self/status, in bytes."""
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    return 0


def _ran_out(err: BaseException, cap: int) -> bool:
    seen: BaseException | None = err
    while seen is not None:
        if isinstance(seen, MemoryError) or "memory" in str(seen).lower():
            return True
        seen = seen.__cause__ or seen.__context__
    return status("VmPeak") + NEAR_CAP >= cap


def _run(job: dict[str, Any]) -> Any:
    if job["kind"] == "image":
        from larkbot.lark.media.images import prepare_image

        src = Path(job["path"])
        return str(prepare_image(src.read_bytes(), Path(job["dest"])))
    from larkbot.lark.media.extract import extract_text

    return extract_text(Path(job["path"]), int(job["limit"]), job.get("seconds"))


def answer(job: dict[str, Any]) -> dict[str, Any]:
    """Run `job` under the memory cap; the answer to write back."""
    from larkbot.lark.media.extract import ExtractError
    from larkbot.lark.media.images import MediaError

    suffix = Path(job["path"]).suffix.lower()
    importlib.import_module(
        "PIL.Image" if job["kind"] == "image" else LIBRARIES.get(suffix, "json")
    )
    base = status("VmRSS")
    cap = base + int(job["memory"])
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    cpu = math.ceil(float(job.get("cpu", 60))) + 5  # a backstop: the parent kills it before
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))
    try:
        out: dict[str, Any] = {"ok": _run(job)}
    except BaseException as err:
        if _ran_out(err, cap):
            megabytes = int(job["memory"]) // (1024 * 1024)
            out = {"error": f"the file is too big to read: it needs over {megabytes} MB of memory"}
        elif isinstance(err, ExtractError | MediaError):
            out = {"error": str(err)}
        else:
            out = {"error": f"it could not be read ({type(err).__name__})"}
    return {**out, "base": base, "peak": status("VmHWM")}


def main() -> None:
    """Read the job, answer it; library chatter on stdout goes to stderr instead."""
    job = json.loads(sys.stdin.buffer.read())
    os.nice(NICENESS)
    real, sys.stdout = sys.stdout, sys.stderr
    reply = answer(job)
    real.write(json.dumps(reply, ensure_ascii=False))
    real.flush()


if __name__ == "__main__":
    main()
