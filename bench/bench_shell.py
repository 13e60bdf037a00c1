"""Shell figures: classifier throughput vs a naive regex baseline (same run), and the shell
tool's round trip for `true`.

The baseline is the kind of deny-list regex many agents use (nanobot-style, on the lower-cased
raw string). It is faster, and the run also counts what it gets wrong on the test table of
disguised attacks and safe look-alikes, which is why the parser is worth its cost.
"""

from __future__ import annotations

import asyncio
import os
import re
import statistics
import tempfile
import time
from collections.abc import Callable

import httpx

from larkbot.config import LiveSettings, parse_settings
from larkbot.storage.db import Database
from tests.shell_cases import EVERYDAY, FAMILIES
from tests.test_shell_danger import DANGEROUS, SAFE
from tools.builtin._shell_danger import analyse, classify, join_continuations
from tools.runtime import ToolRuntime

NAIVE = [
    re.compile(p)
    for p in (
        r"\brm\s+-[rf]{1,2}\b",
        r"\bsudo\b",
        r"\b(mkfs|diskpart)\b",
        r"\bdd\s+if=",
        r">\s*/dev/sd",
        r"\b(shutdown|reboot|poweroff)\b",
        r":\(\)\s*\{.*\};\s*:",
        r"(curl|wget)[^|]*\|\s*(ba)?sh",
        r"git\s+push\s+(-f|--force)",
        r"git\s+reset\s+--hard",
        r"git\s+clean\s+-\w*f",
        r">\s*/etc/",
    )
]


def naive(command: str) -> bool:
    """The baseline: any deny-list regex matching the lower-cased raw string."""
    low = command.lower()
    return any(p.search(low) for p in NAIVE)


def _rate(fn: Callable[[str], object], commands: list[str], seconds: float = 2.0) -> float:
    """Commands per second of `fn` over `commands`, repeated for about `seconds`."""
    done, started = 0, time.perf_counter()
    while time.perf_counter() - started < seconds:
        for command in commands:
            fn(command)
        done += len(commands)
    return done / (time.perf_counter() - started)


async def _round_trips(n: int = 60, modes: tuple[str, ...] = ("off",)) -> dict[str, list[float]]:
    """Seconds per `true` call for each sandbox mode, the modes' calls interleaved (a load
    change on this shared machine then weighs on each alike)."""
    from tools.builtin.shell import ShellTool

    previous = os.environ.get("LARKBOT_HOME")
    times: dict[str, list[float]] = {mode: [] for mode in modes}
    with tempfile.TemporaryDirectory() as home:
        os.environ["LARKBOT_HOME"] = home  # never touch the user's real home
        os.mkdir(f"{home}/.secrets")  # what the sandbox hides, as in a real home
        db = Database(f"sqlite:///{home}/larkbot.db")
        async with httpx.AsyncClient() as http:
            tools = {
                mode: ShellTool(
                    ToolRuntime(
                        "cli",
                        LiveSettings(parse_settings({"tools": {"shell": {"sandbox": mode}}})),
                        http,
                        db,
                    )
                )
                for mode in modes
            }
            for tool in tools.values():
                await tool.run(command="true")  # warm-up (and the sandbox probe)
            for _ in range(n):
                for mode, tool in tools.items():
                    started = time.perf_counter()
                    await tool.run(command="true")
                    times[mode].append(time.perf_counter() - started)
        await db.close()
    if previous is None:
        os.environ.pop("LARKBOT_HOME", None)
    else:
        os.environ["LARKBOT_HOME"] = previous
    return times


def _worst_nested() -> list[tuple[str, str]]:
    """The inputs that were cubic (nested if/while), at the largest size the classifier parses."""
    depth = 950  # ~20 KB, ~1,000 levels deep
    return [
        ("nested while", "while true; do " * depth + "rm -rf build" + "; done" * depth),
        ("nested if", "if true; then " * depth + "ls" + "; fi" * depth),
    ]


def _per_call_us(command: str, runs: int = 5) -> float:
    """Median µs of one uncached classification of `command`."""
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        analyse(join_continuations(command), 0, None)
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1e6


def _family_table() -> None:
    """Misses per family (and false alarms on everyday commands): classifier vs baseline."""
    home = os.environ.pop("LARKBOT_HOME", None)  # the rows name the default ~/.larkbot
    try:
        _print_families()
    finally:
        if home is not None:
            os.environ["LARKBOT_HOME"] = home


def _print_families() -> None:
    print("attack table by family: missed by the classifier / by the naive baseline")
    for family, commands in FAMILIES.items():
        ours = sum(1 for c in commands if classify(c) is None)
        base = sum(1 for c in commands if not naive(c))
        print(f"  {family:<50} {len(commands):>3} rows: {ours:>3} / {base:>3}")
    rows = sum(len(c) for c in FAMILIES.values())
    ours = sum(1 for cs in FAMILIES.values() for c in cs if classify(c) is None)
    base = sum(1 for cs in FAMILIES.values() for c in cs if not naive(c))
    ours_false = sum(1 for c in EVERYDAY if classify(c) is not None)
    base_false = sum(1 for c in EVERYDAY if naive(c))
    print(
        f"  total: {rows} dangerous rows, classifier misses {ours}, baseline misses {base}; "
        f"false alarms on {len(EVERYDAY)} everyday commands: classifier {ours_false}, "
        f"baseline {base_false}"
    )


def main() -> None:
    """Print the figures."""
    commands = [c for c, _ in DANGEROUS] + SAFE
    normal = statistics.median(_per_call_us(c, 3) for c in commands)
    print(f"classifier per command, normal input: median {normal:.0f} µs")
    for name, command in _worst_nested():
        worst = _per_call_us(command)
        print(
            f"classifier on the worst input ({name}, {len(command) / 1024:.0f} KB): "
            f"{worst / 1000:.1f} ms = {worst / normal:.0f}x a normal command"
        )
    _family_table()
    uncached = _rate(lambda c: analyse(join_continuations(c), 0, None), commands)
    cached = _rate(classify, commands, 0.5)
    baseline = _rate(naive, commands)
    print(
        f"classifier (parse every time): {uncached:,.0f} commands/s "
        f"({1e6 / uncached:.0f} µs per command)"
    )
    print(f"classifier (cached, repeated commands): {cached:,.0f} commands/s")
    print(
        f"naive regex baseline: {baseline:,.0f} commands/s "
        f"-> classifier costs {baseline / uncached:.0f}x the baseline's time"
    )
    missed = [c for c, _ in DANGEROUS if not naive(c)]
    false_alarms = [c for c in SAFE if naive(c)]
    ours_missed = [c for c, _ in DANGEROUS if classify(c) is None]
    ours_false = [c for c in SAFE if classify(c) is not None]
    print(
        f"on the test table ({len(DANGEROUS)} dangerous, {len(SAFE)} safe): "
        f"baseline misses {len(missed)} and false-alarms {len(false_alarms)}; "
        f"classifier misses {len(ours_missed)} and false-alarms {len(ours_false)}"
    )
    _sandbox_cost()


def _sandbox_cost() -> None:
    """The shell's round trip for `true`, unsandboxed and in the bwrap sandbox (issue #39)."""
    from tools.builtin._sandbox import probe

    sandboxed = probe().available
    runs = asyncio.run(_round_trips(modes=("off", "bwrap") if sandboxed else ("off",)))
    plain = runs["off"]
    print(
        f"shell tool round trip for `true`: median {statistics.median(plain) * 1e3:.1f} ms, "
        f"p90 {sorted(plain)[int(len(plain) * 0.9)] * 1e3:.1f} ms ({len(plain)} runs, no sandbox)"
    )
    if not sandboxed:
        print(f"bwrap sandbox: not measured ({probe().why_not})")
        return
    boxed = runs["bwrap"]
    added = [b - p for b, p in zip(boxed, plain, strict=True)]  # pairs run back to back
    print(
        f"in the bwrap sandbox: median {statistics.median(boxed) * 1e3:.1f} ms, "
        f"p90 {sorted(boxed)[int(len(boxed) * 0.9)] * 1e3:.1f} ms; p50 added per call "
        f"{statistics.median(added) * 1e3:.1f} ms (goal <= 15 ms)"
    )
