"""The Dockerfile's build args: WITH_BROWSER=1 adds Debian's Chromium and CJK fonts, else not.

No Docker daemon is needed: the package step (the first `RUN`) is run by `sh` exactly as
written, with `apt-get`, `ln` and `rm` replaced by stubs that record their arguments, and the
build args given as the environment (which is how `docker build` hands ARGs to `RUN`).
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

DOCKERFILE = Path(__file__).resolve().parents[1] / "Dockerfile"


def _package_step() -> str:
    """The first RUN instruction, continuation lines joined."""
    text = DOCKERFILE.read_text().replace("\\\n", " ")
    found = re.search(r"^RUN (.+)$", text, re.MULTILINE)
    assert found, "no RUN in the Dockerfile"
    return found.group(1)


def _installed(tmp_path: Path, args: dict[str, str]) -> set[str]:
    """Packages the package step asks apt-get to install with these build args."""
    log = tmp_path / "calls"
    stubs = tmp_path / "bin"
    stubs.mkdir(parents=True)
    for name in ("apt-get", "ln", "rm"):
        stub = stubs / name
        stub.write_text(f'#!/bin/sh\necho "{name} $*" >> "{log}"\n')
        stub.chmod(0o755)
    env = {"PATH": f"{stubs}:/usr/bin:/bin", **args}
    subprocess.run(["sh", "-ec", _package_step()], env=env, check=True, timeout=10)
    packages: set[str] = set()
    for line in log.read_text().splitlines():
        words = line.split()
        if words[:2] == ["apt-get", "install"]:
            packages |= {w for w in words[2:] if not w.startswith("-")}
    return packages


def _declared_default(name: str) -> str:
    found = re.search(rf"^ARG {name}=(\S+)$", DOCKERFILE.read_text(), re.MULTILINE)
    assert found, f"ARG {name} is not declared"
    return found.group(1)


def test_with_browser_adds_chromium_and_cjk_fonts_and_the_default_does_not(
    tmp_path: Path,
) -> None:
    default = _declared_default("WITH_BROWSER")
    assert default == "0"
    plain = _installed(tmp_path / "plain", {"WITH_BROWSER": default, "WITH_DESKTOP": "0"})
    assert {"ripgrep", "fd-find", "tini"} <= plain
    assert "chromium" not in plain and "fonts-noto-cjk" not in plain
    browser = _installed(tmp_path / "browser", {"WITH_BROWSER": "1", "WITH_DESKTOP": "0"})
    assert browser - plain == {"chromium", "fonts-noto-cjk"}
