"""Run every `bench/bench_*.py` module's `main()` (or those named on the command line)."""

from __future__ import annotations

import importlib
import pkgutil
import sys
import time

import bench


def main(argv: list[str]) -> int:
    """Discover and run the benchmark modules; each prints its own figures."""
    names = sorted(
        m.name for m in pkgutil.iter_modules(bench.__path__) if m.name.startswith("bench_")
    )
    wanted = [n if n.startswith("bench_") else f"bench_{n}" for n in argv]
    failed = 0
    for name in wanted or names:
        print(f"\n== {name}", flush=True)
        started = time.perf_counter()
        try:
            importlib.import_module(f"bench.{name}").main()
        except Exception as err:  # a broken benchmark must not hide the others' figures
            failed += 1
            print(f"!! {name} failed: {err!r}")
        print(f"   ({time.perf_counter() - started:.1f} s)", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
