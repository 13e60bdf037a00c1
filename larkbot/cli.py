"""The `larkbot` command: serve, chat, doctor, setup, tools, jobs, owner, web-token, skills."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from larkbot import __version__
from larkbot.config import Settings, load_settings
from larkbot.errors import ConfigError
from larkbot.preflight import StartupError

# subcommand -> "module:function(settings, args) -> exit code"; imported lazily so that
# `larkbot --help` stays fast and one subsystem's import cost never slows another command.
COMMANDS: dict[str, str] = {
    "serve": "larkbot.server:run_serve",
    "chat": "larkbot.chat:run_chat",
    "doctor": "larkbot.doctor:run_doctor",
    "tools": "larkbot.tools_cli:run_tools",
    "jobs": "larkbot.scheduler.cli:run_jobs",
    "owner": "larkbot.owner_cli:run_owner",
    "web-token": "larkbot.web.token_cli:run_web_token",
    "setup": "larkbot.setup.cli:run_setup",
    "skills": "larkbot.skills_cli:run_skills",
    "auth": "larkbot.lark.oauth.cli:run_auth",
}


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every subcommand."""
    parser = argparse.ArgumentParser(
        prog="larkbot", description="A self-hosted AI agent that lives in Lark/Feishu."
    )
    parser.add_argument("--version", action="version", version=f"larkbot {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    def add(name: str, help_text: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_text, description=help_text)
        p.add_argument("--config", metavar="FILE", help="config file (default: lookup order)")
        return p

    add("serve", "run the bot service (webhook or long connection) until SIGTERM")
    add("chat", "talk to the agent in this terminal (y/N consent)")
    add("doctor", "check config, storage, Lark credentials and LLM reachability")
    tools = add("tools", "list the tools each interface exposes")
    tools.add_argument("--interface", choices=["cli", "web", "lark", "fast"], default=None)
    jobs = add("jobs", "list, show, run now or remove scheduled tasks")
    jobs.add_argument("action", choices=["list", "show", "run", "remove"])
    jobs.add_argument("job_id", nargs="?")
    owner = add("owner", "list, add or remove the bot's owners")
    owner.add_argument("action", choices=["list", "add", "remove"])
    owner.add_argument("open_id", nargs="?", metavar="OPEN_ID")
    add("web-token", "print a new web token (the old one stops working)")
    setup = add("setup", "create (or update) the Lark app with one scan of a QR code")
    setup.add_argument(
        "--app-id", metavar="ID", help="update this existing app: ask only for what it lacks"
    )
    setup.add_argument("--no-qr", action="store_true", help="print the link only, no QR code")
    skills = add("skills", "list, add or remove skills (folders with a SKILL.md, read on demand)")
    skills.add_argument("action", choices=["list", "add", "remove"])
    skills.add_argument("target", nargs="?", metavar="PATH|NAME")
    auth = add("auth", "list or revoke people's Lark authorizations (never shows tokens)")
    auth.add_argument("action", choices=["list", "revoke"])
    auth.add_argument("open_id", nargs="?", metavar="OPEN_ID")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if not args.command:
        parser.print_help()
        return 0
    try:
        settings: Settings = load_settings(args.config)
    except ConfigError as err:
        print(f"larkbot: {err}", file=sys.stderr)
        return 2
    module_name, func_name = COMMANDS[args.command].split(":")
    func = getattr(importlib.import_module(module_name), func_name)
    try:
        return int(func(settings, args))
    except ConfigError as err:
        print(f"larkbot: {err}", file=sys.stderr)
        return 2
    except StartupError as err:
        print(f"larkbot {args.command}: cannot start: {err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
