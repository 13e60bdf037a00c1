"""Rules for git, Docker and ssh: history rewrites, forced pushes, prunes, remote commands."""

from __future__ import annotations

import re

from tools.builtin._shell_paths import DYN, PSUB, flags, is_sensitive, words
from tools.builtin._shell_rules import Ctx, rule

# `git -c key=value` keys whose value is a command git will run.
_GIT_EXEC_KEYS = re.compile(
    r"^(core\.(pager|editor|sshcommand|fsmonitor|hookspath|askpass|gitproxy)|diff\.external|"
    r"sequence\.editor|pager\.|alias\.|.*\.textconv$|filter\.|credential\.helper|gpg\.program|"
    r"uploadpack\.|include\.|includeif\.|protocol\.|remote\..*\.(uploadpack|receivepack|vcs)|"
    r"receive\.procreceive|merge\..*\.driver|diff\..*\.command|mergetool\.|difftool\.|"
    r"sendemail\..*cmd|core\.(worktree|gitdir|attributesfile|excludesfile)|"
    r"ssh\.variant|http\..*proxy|web\.browser|browser\.|man\.|instaweb\.)",
    re.I,
)
_GIT_GLOBAL_VALUE = words("-C -c --git-dir --work-tree --namespace --config-env")


def _git_sub(args: list[str], ctx: Ctx) -> tuple[str, list[str]] | str:
    """Skip git's global options; return (subcommand, its args) or a reason."""
    i = 0
    while i < len(args) and args[i].startswith("-"):
        a = args[i]
        value = args[i + 1] if a in _GIT_GLOBAL_VALUE and i + 1 < len(args) else ""
        if a in ("-c", "--config-env") or a.startswith("--config-env="):
            key = (value or a.partition("=")[2]).split("=", 1)[0]
            if _GIT_EXEC_KEYS.match(key) or key.startswith((DYN, PSUB)):
                return ctx.why("git -c sets a command for git to run")
        if a.startswith("--exec-path="):
            return ctx.why("git --exec-path runs git's helpers from another directory")
        i += 2 if a in _GIT_GLOBAL_VALUE else 1
    if i >= len(args):
        return "", []
    if args[i].startswith((DYN, PSUB)):
        return ctx.why("git subcommand computed at run time")
    return args[i], args[i + 1 :]


# (subcommand, option prefixes) that make git run a program the option names.
_RUNS_OPTIONS = {
    "ls-remote": ("--upload-pack", "-u"),
    "fetch": ("--upload-pack",),
    "pull": ("--upload-pack",),
    "clone": ("--upload-pack", "-u", "--template", "--config", "-c"),
    "push": ("--receive-pack", "--exec"),
    "archive": ("--exec", "--remote=ext::"),
    "rebase": ("-x", "--exec"),
    "difftool": ("-x", "--extcmd"),
    "grep": ("-O", "--open-files-in-pager"),
    "send-email": ("--to-cmd", "--cc-cmd", "--sendmail-cmd", "--smtp-server=/"),
    "bisect": ("run",),
    "submodule": ("foreach",),
    "daemon": ("",),
    "instaweb": ("",),
    "credential": ("fill",),
}


def _runs_program(sub: str, args: list[str]) -> bool:
    prefixes = _RUNS_OPTIONS.get(sub)
    if prefixes is None:
        return any("ext::" in a or a.startswith("fd::") for a in args)
    return (
        any(a.startswith(prefixes) for a in args)
        or "" in prefixes
        or (any("ext::" in a for a in args))
    )


def _git_reason(sub: str, args: list[str]) -> str | None:
    f = flags(args)
    s, long = f.shorts, f.longs
    if _runs_program(sub, args):
        return f"git {sub} with an option that runs a program"
    if sub == "push" and ("--prune" in long or "--mirror" in long):
        return "deletes remote branches (push --prune/--mirror)"
    if sub == "prune" or (sub == "worktree" and f.operands[:1] in (["remove"], ["prune"])):
        return "prunes objects or worktrees"
    if sub == "reset" and ({"--keep", "--merge"} & long):
        return "git reset moves the branch and discards commits"
    if sub in ("replace", "notes") and ("d" in s or f.operands[:1] != ["list"]):
        return f"git {sub} changes what history shows" if sub == "replace" else None
    if sub == "tag" and ("d" in s or "--delete" in long):
        return "deletes a tag"
    if sub == "push":
        if "f" in s or any(x.startswith(("--force", "--mirror")) for x in long):
            return "force push"
        if "d" in s or "--delete" in long or any(o.startswith(":") for o in f.operands[1:]):
            return "deletes remote branches"
        if any(o.startswith("+") for o in f.operands[1:]):
            return "force push"
    if sub == "reset" and any(x in ("--hard", "--har", "--ha", "--h") for x in long):
        return "git reset --hard discards local changes"
    if sub == "clean" and ("f" in s or "--force" in long) and not ("n" in s or "--dry-run" in long):
        return "git clean deletes untracked files"
    if sub == "branch" and (
        "D" in s or (("d" in s or "--delete" in long) and ("f" in s or "--force" in long))
    ):
        return "force-deletes a branch"
    if sub in ("checkout", "switch") and (
        "f" in s or "--force" in long or "--discard-changes" in long
    ):
        return "discards local changes"
    if sub == "checkout" and ("--" in args or "." in f.operands):
        return "discards local changes"
    if sub == "restore" and ("." in f.operands or ":/" in f.operands) and "--staged" not in long:
        return "discards local changes"
    if sub in ("filter-branch", "filter-repo"):
        return "rewrites history"
    if sub == "stash" and f.operands[:1] in (["clear"], ["drop"]):
        return "deletes stashed changes"
    if sub == "rm" and ("r" in s or "--recursive" in long):
        return "recursive delete"
    if sub == "reflog" and f.operands[:1] == ["expire"]:
        return "expires the reflog"
    if sub == "gc" and any(x.startswith("--prune") for x in long):
        return "prunes unreachable commits"
    if sub == "update-ref" and "d" in s:
        return "deletes a ref"
    if sub == "config" and any(_GIT_EXEC_KEYS.match(o) for o in f.operands):
        return "git config sets a command for git to run"
    return None


@rule("git")
def _git(base: str, args: list[str], ctx: Ctx) -> str | None:
    found = _git_sub(args, ctx)
    if isinstance(found, str):
        return found
    sub, rest = found
    for a in rest:  # `git log --output=FILE`, `git diff -o`: judged like any write
        if a.startswith("--output="):
            reason = ctx.write(a.split("=", 1)[1])
            if reason:
                return reason
    what = _git_reason(sub, rest)
    return ctx.why(f"destructive git: {what}") if what else None


_DOCKER_GLOBAL_VALUE = words("-H --host --context -c --config -l --log-level")


def _mounts_host(args: list[str]) -> bool:
    for i, a in enumerate(args):
        spec = ""
        if a in ("-v", "--volume", "--mount") and i + 1 < len(args):
            spec = args[i + 1]
        elif a.startswith(("--volume=", "--mount=")):
            spec = a.split("=", 1)[1]
        source = spec.split(":", 1)[0] if not spec.startswith("type=") else ""
        for part in spec.split(","):
            if part.startswith(("source=", "src=")):
                source = part.split("=", 1)[1]
        if source and is_sensitive(source):
            return True
    return "--privileged" in args or any(a in ("--pid=host", "--net=host") for a in args)


@rule("docker", "podman", "docker-compose", "nerdctl")
def _docker(base: str, args: list[str], ctx: Ctx) -> str | None:
    i = 0
    while i < len(args) and args[i].startswith("-"):
        i += 2 if args[i] in _DOCKER_GLOBAL_VALUE else 1
    words = (["compose"] if base == "docker-compose" else []) + args[i:]
    f = flags(words)
    verbs = f.operands[:2]
    if "prune" in verbs:
        return ctx.why("deletes Docker data (prune)")
    forced = "f" in f.shorts or "--force" in f.longs or "v" in f.shorts or "--volumes" in f.longs
    removes = verbs[:1] in (["rm"], ["rmi"]) or verbs[1:2] == ["rm"]
    if removes and (forced or verbs[:1] == ["volume"]):
        return ctx.why("force-removes Docker containers, images or volumes")
    if verbs[:2] == ["compose", "down"] and (forced or "--rmi" in f.longs):
        return ctx.why("deletes Docker volumes or images")
    runs = verbs[:1] in (["run"], ["create"]) or verbs[:2] == ["container", "run"]
    if runs and _mounts_host(words):
        return ctx.why("container with access to the host")
    return None


_SSH_VALUE = words("-b -c -D -E -e -F -I -i -J -L -l -m -O -o -p -Q -R -S -W -w -B")


@rule("ssh")
def _ssh(base: str, args: list[str], ctx: Ctx) -> str | None:
    i = 0
    while i < len(args) and args[i].startswith("-"):
        option = args[i + 1] if args[i] == "-o" and i + 1 < len(args) else args[i]
        if re.search(r"(proxy|local|known_hosts)command", option, re.I):
            return ctx.why("ssh option that runs a local command")
        i += 2 if args[i] in _SSH_VALUE else 1
    remote = args[i + 1 :]  # after the host
    if not remote:
        return None
    script = " ".join(remote)
    if DYN in script or PSUB in script:
        return ctx.why("remote command computed at run time")
    inner = ctx.sub(script)
    return f"on the remote host, {inner}" if inner else None
