"""Rules for package managers: installing a package runs its code (setup.py, npm lifecycle
scripts, maintainer scripts) and changes what later commands run, so it is asked every time.

Listing, searching, showing and running a project's own scripts (`npm test`, `pip list`) are not
installs. `npx`/`uvx`, which may fetch and run a package, are left to the session's consent.
"""

from __future__ import annotations

from tools.builtin._shell_paths import flags, words
from tools.builtin._shell_rules import Ctx, rule

_INSTALL = "installs packages, which runs their install scripts"

# Subcommands that install, build, upgrade or remove packages.
_VERBS = {
    "pip": words("install download wheel uninstall"),
    "npm": words(
        "install i in ins inst insta instal isnt isnta isntal isntall add ci update up upgrade "
        "udpate rebuild rb link ln install-test it install-ci-test cit uninstall remove rm un"
    ),
    "pnpm": words("install i add update up upgrade rebuild rb link ln remove rm un dlx"),
    "yarn": words("install add upgrade up global dlx remove link rebuild"),
    "apt": words(
        "install reinstall upgrade full-upgrade dist-upgrade remove purge autoremove build-dep"
    ),
    "dnf": words("install reinstall upgrade update remove erase downgrade group groupinstall"),
    "apk": words("add del upgrade fix"),
    "zypper": words("install in update up remove rm dist-upgrade dup patch"),
    "brew": words("install reinstall upgrade uninstall remove rm tap"),
    "gem": words("install update uninstall"),
    "bundle": words("install update add"),
    "cargo": words("install uninstall"),
    "go": words("install"),
    "pipx": words("install inject upgrade upgrade-all reinstall reinstall-all run"),
    "poetry": words("install add update remove"),
    "pdm": words("install add update remove sync"),
    "conda": words("install create update upgrade remove uninstall"),
    "composer": words("install require update upgrade remove"),
    "snap": words("install refresh remove"),
    "flatpak": words("install update uninstall"),
    "port": words("install upgrade uninstall"),
    "cpanm": frozenset(),
    "luarocks": words("install remove"),
    "nix-env": frozenset(),
}
_UV_SECOND = (["install"], ["sync"], ["uninstall"])
_DPKG_LONG = words("--install --remove --purge --unpack --upgrade --erase --freshen")
_ALIASES = {
    "pip3": "pip",
    "apt-get": "apt",
    "aptitude": "apt",
    "yum": "dnf",
    "microdnf": "dnf",
    "mamba": "conda",
    "micromamba": "conda",
}


@rule(*_VERBS, *_ALIASES, "pacman", "dpkg", "rpm", "uv", "cpan")
def _packages(base: str, args: list[str], ctx: Ctx) -> str | None:
    manager = "pip" if base.startswith("pip") and base != "pipx" else _ALIASES.get(base, base)
    f = flags(args)
    if manager in ("cpanm", "cpan"):
        return ctx.why(_INSTALL) if f.operands else None
    if manager == "nix-env":
        return ctx.why(_INSTALL) if {"i", "e", "u"} & f.shorts else None
    if manager == "pacman":  # -S sync, -U local file, -R remove; -Q and -Ss/-Si only ask
        searching = f.shorts & {"s", "i", "l"} and "S" in f.shorts
        return ctx.why(_INSTALL) if {"S", "U", "R"} & f.shorts and not searching else None
    if manager in ("dpkg", "rpm"):
        letters = {"i", "r", "P"} if manager == "dpkg" else {"i", "U", "F", "e"}
        changes = letters & f.shorts or _DPKG_LONG & f.longs
        querying = manager == "rpm" and "q" in f.shorts  # rpm -qi shows a package's info
        return ctx.why(_INSTALL) if changes and not querying else None
    verb = next(iter(f.operands), "")
    if manager == "uv":
        second = f.operands[1:2]
        installs = verb in ("add", "sync", "remove")
        installs = installs or (verb in ("pip", "tool") and second in _UV_SECOND)
        return ctx.why(_INSTALL) if installs else None
    if manager == "yarn" and not f.operands:
        return ctx.why(_INSTALL)  # a bare `yarn` installs the project's dependencies
    return ctx.why(_INSTALL) if verb in _VERBS[manager] else None


BUN_VERBS = words("install i add update remove rm link")  # bun's rule is the interpreter's


def python_module_installs(module: str, args: list[str]) -> bool:
    """`python -m pip install x` (also ensurepip's upgrade, uv's pip)."""
    f = flags(args)
    return module in ("pip", "pip3") and bool(set(f.operands[:1]) & _VERBS["pip"])
