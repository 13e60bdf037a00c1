"""Every row of the attack table is dangerous, every everyday command is not, and nesting is linear.

The table (tests/shell_cases.py) groups techniques by family. Before this table, the
classifier missed 218 of its first 333 dangerous rows (0 false alarms on the 145 everyday commands);
bench/bench_shell.py keeps the misses and false alarms of the classifier and of a naive
deny-list baseline. Issue #39 added four families judged by effect (tests/shell_cases_effects.py):
the classifier missed 91 of their 114 rows before, none after, and flags none of 67 more
everyday look-alikes (`npm install`, `npm ci` and `pip install -r` moved to the dangerous rows).
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.shell_cases import EVERYDAY, FAMILIES
from tests.test_shell_danger import DANGEROUS, SAFE
from tools.builtin._shell_danger import analyse, classify
from tools.builtin._shell_wrappers import WRAPPERS

ROWS = [(family, command) for family, commands in FAMILIES.items() for command in commands]
REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _in_a_project(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Judge the table from a project directory outside the temp roots, as the bot runs.

    From a checkout under /tmp, `../other-project` is a temp path and rightly allowed, so the
    rows that write next to the project would not test what they say.
    """
    monkeypatch.delenv("LARKBOT_HOME", raising=False)  # rows name the default ~/.larkbot
    temp = (Path("/tmp"), Path("/var/tmp"), Path(tempfile.gettempdir()).resolve())
    if not any(REPO.is_relative_to(root) for root in temp):
        monkeypatch.chdir(REPO)
        yield
        return
    project = Path.home() / "larkbot-test-project"  # not a dotfile: those are protected
    project.mkdir(exist_ok=True)
    monkeypatch.chdir(project)
    yield
    monkeypatch.undo()
    project.rmdir()


def test_the_table_is_large_and_covers_every_family() -> None:
    assert len(ROWS) + len(DANGEROUS) + len(EVERYDAY) + len(SAFE) >= 250
    assert all(len(commands) >= 8 for commands in FAMILIES.values())


@pytest.mark.parametrize(("family", "command"), ROWS)
def test_dangerous_by_family(family: str, command: str) -> None:
    assert classify(command) is not None, f"{family}: {command}"


@pytest.mark.parametrize("command", EVERYDAY)
def test_everyday_commands_are_not_flagged(command: str) -> None:
    assert classify(command) is None, classify(command)


@pytest.mark.parametrize("wrapper", sorted(WRAPPERS))
def test_every_wrapper_in_the_table_is_unwrapped(wrapper: str) -> None:
    """Each wrapper, given its own skipped operands, passes `rm -rf x` on to be judged."""
    _takes, skip = WRAPPERS[wrapper]
    command = " ".join([wrapper, *(["1"] * skip), "rm", "-rf", "x"])
    assert "recursive delete" in (classify(command) or ""), command
    assert classify(" ".join([wrapper, *(["1"] * skip), "ls", "-la"])) is None


def test_state_follows_the_script() -> None:
    """cd moves later writes; a write is remembered for a later run, even across sh -c."""
    assert classify("cd sub && rm -f x.txt") is None
    assert classify("cd ~ && rm -f x.txt") is not None
    assert classify("sh -c 'echo id > s.sh'; sh s.sh") is not None
    assert classify("echo id > s.sh; sh other.sh") is None


def test_arithmetic_on_plain_values_is_fine() -> None:
    assert classify("n=3; echo $((n * 2))") is None
    assert classify("x='a[$(id)]'; echo $((x))") is not None
    assert classify("read n; echo $((n + 1))") is not None


def _timed(command: str) -> float:
    """The best of five runs, in this thread's CPU time: while other processes hold the
    machine's cores the wall clock runs on, but the classifier's time does not."""
    best = float("inf")
    for _ in range(5):
        started = time.thread_time()
        analyse(command, 0, None)
        best = min(best, time.thread_time() - started)
    return best


def test_nested_if_and_while_are_linear() -> None:
    """Regression: nested if/while took cubic time (a 9 KB command froze /healthz for 8 s)."""
    for opener, closer in (("if true; then ", "; fi"), ("while true; do ", "; done")):
        small = _timed(opener * 100 + "ls" + closer * 100)
        large = _timed(opener * 400 + "ls" + closer * 400)
        # 4x the input: linear 4x (measured 4-6x), quadratic 16x, the old cubic 64x
        assert large < max(small, 0.002) * 16, (opener, small, large)
        assert large < 1.0
