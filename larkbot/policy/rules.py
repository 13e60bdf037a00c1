"""The rules: who may run which tool with which arguments here, as one `decide()`.

Inputs, and nothing else: the tool's declared kind (`side_effect`, `private_data`, read-only,
`untrusted_output`, `read_path_argument`) and consent and sharing hooks, the interface, the sender's
identity (owner or not, from the verified event, never from the model), `owner.share`,
`workspace` (who may use the tools acting as the asker), the
session's grants, the files the sender sent in this turn, and the untrusted content the turn
has seen. Interfaces' consent providers only present an `Ask`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal

from larkbot.config_sections import WorkspaceConfig
from larkbot.context import RequestContext
from larkbot.logs import get_logger
from larkbot.policy.decision import Allow, Ask, Decision, Refuse
from larkbot.policy.grants import ConsentStore
from larkbot.policy.paths import ProtectedPaths
from tools.base import BaseTool

log = get_logger(__name__)

ShareRule = Literal["everyone"] | list[str]

# Interfaces whose consent provider asks the owner about each ordinary call (y/N, a web card).
# In Lark the owner's own message is the consent for ordinary calls; only `always` asks (and
# untrusted turns) get an Approve / Deny card, so a chat is not a stream of cards.
ASKS_ORDINARY_CONSENT = frozenset({"cli", "web"})

DEFAULT_WORKSPACE = WorkspaceConfig()
NO_CONTEXT = "refused: this call has no request context (nobody known asked for it)"


def _shared(share: Mapping[str, ShareRule], tool: str, sender: str) -> bool:
    rule = share.get(tool)
    return rule == "everyone" or (isinstance(rule, list) and sender in rule)


def _reads_uploads_only(
    tool: BaseTool, ctx: RequestContext, share: Mapping[str, ShareRule]
) -> bool:
    """A non-owner's private read that only the files they sent in this turn open."""
    return (
        not ctx.is_owner
        and tool.private_data
        and not tool.side_effect
        and bool(ctx.uploads)
        and tool.read_path_argument is not None
        and not _shared(share, tool.name, ctx.sender_id)
    )


def _names_an_upload(tool: BaseTool, arguments: dict[str, Any], ctx: RequestContext) -> bool:
    raw = arguments.get(tool.read_path_argument or "")
    if not isinstance(raw, str) or not raw:
        return False
    return _resolved(raw) in ctx.uploads


def _resolved(raw: str) -> str:
    """As the file tools resolve it: `~`, `..` and symlinks cannot point elsewhere."""
    return str(Path(os.path.expanduser(raw)).resolve(strict=False))


def _asker_access(tool: BaseTool, ctx: RequestContext, workspace: WorkspaceConfig) -> Decision:
    """`acts_as_asker` tools: on when `workspace.enabled`; non-owners per `workspace.members`."""
    if not workspace.enabled:
        return Refuse(f"refused: {tool.name} is turned off on this bot (workspace.enabled)")
    if ctx.is_owner:
        return Allow("owner, acting as themselves")
    if workspace.members == "off":
        return Refuse(
            f"refused: on this bot only its owners may use {tool.name} (workspace.members is "
            "off). Tell the user you cannot do this for them."
        )
    return Allow(f"acting as the asker (workspace.members: {workspace.members})")


def access(
    tool: BaseTool,
    ctx: RequestContext | None,
    share: Mapping[str, ShareRule],
    workspace: WorkspaceConfig = DEFAULT_WORKSPACE,
) -> Decision:
    """Whether this sender may use `tool` at all (what the model is shown; what history hides)."""
    if ctx is None:
        return Refuse(NO_CONTEXT)
    if ctx.interface not in tool.interfaces:
        return Refuse(f"refused: {tool.name} is not available on the {ctx.interface} interface")
    if tool.acts_as_asker:
        return _asker_access(tool, ctx, workspace)
    if ctx.is_owner:
        return Allow("owner")
    if tool.side_effect:  # the design rule: no config can open a side effect to a non-owner
        return Refuse(
            f"refused: {tool.name} changes things on the owner's machine or accounts and only "
            "the bot's owner may use it. Tell the user you cannot do this for them."
        )
    if tool.private_data:
        if _shared(share, tool.name, ctx.sender_id):
            return Allow("opened by owner.share")
        if _reads_uploads_only(tool, ctx, share):
            return Allow("the sender's own uploads of this turn only")
        return Refuse(
            f"refused: {tool.name} reads the owner's private data and the owner has not "
            "shared it with this user. Tell the user you cannot look this up for them."
        )
    return Allow("read-only tool")


def _untrusted_note(sources: Sequence[str]) -> str:
    named = "; ".join(sources)
    return f"the conversation holds text the owner did not write (/new starts clean): {named}"


def _asker_decision(
    tool: BaseTool,
    arguments: dict[str, Any],
    ctx: RequestContext,
    verdict: Decision,
    workspace: WorkspaceConfig,
) -> Decision:
    """A workspace call: reads run; a write (its `consent_check` says what changes) is
    confirmed by the asker on a card, and only owners (or everyone with `members: write`)
    may write at all."""
    try:
        change = tool.consent_check(**arguments)
    except Exception as err:  # a broken hook refuses the call; it must not end the turn
        return Refuse(f"{tool.name}: could not check consent ({type(err).__name__}: {err})")
    if change is None:
        return verdict
    if not ctx.is_owner and workspace.members != "write":
        return Refuse(
            f"refused: {tool.name} would change Lark content, and on this bot only its owners "
            f"may do that (workspace.members is {workspace.members}). Tell the user."
        )
    sources = tuple(ctx.untrusted)
    prompt = f"{change}\n— {_untrusted_note(sources)}" if sources else change
    return Ask(prompt, tool.name, True, sources, confirm_by=ctx.sender_id)


def decide(
    tool: BaseTool,
    arguments: dict[str, Any],
    ctx: RequestContext | None,
    share: Mapping[str, ShareRule],
    granted: Callable[[str], bool] = lambda scope: False,
    protected: Callable[[list[str], bool], str | None] = lambda paths, tree: None,
    workspace: WorkspaceConfig = DEFAULT_WORKSPACE,
) -> Decision:
    """The one answer for one call: Allow, Refuse(reason) or Ask(prompt, scope, always).

    `protected(paths, tree)` names the bot's own file (config, keys, database, plugins, a
    process environment) a call's `touched_paths` reach; such a call is asked every time.
    """
    verdict = access(tool, ctx, share, workspace)
    if ctx is None or isinstance(verdict, Refuse):
        return verdict
    if tool.acts_as_asker:
        return _asker_decision(tool, arguments, ctx, verdict, workspace)
    if _reads_uploads_only(tool, ctx, share) and not _names_an_upload(tool, arguments, ctx):
        names = ", ".join(Path(p).name for p in ctx.uploads)
        return Refuse(
            f"refused: {tool.name} may read only the files this user sent with their message "
            f"({names}); the owner's other files are private. Tell the user you cannot."
        )
    try:
        prompt = tool.consent_check(**arguments)
        always = bool(tool.consent_always(**arguments)) if prompt else False
        scope = tool.consent_scope(**arguments) if prompt else tool.name
        # the inbox is protected, but the files this sender sent in this turn are theirs
        touched = [p for p in tool.touched_paths(**arguments) if _resolved(p) not in ctx.uploads]
        hit = protected(touched, tool.searches_trees)
        sources = tool.untrusted_bar(ctx.untrusted, **arguments) if ctx.untrusted else ()
        shared = tool.share_check(ctx, **arguments)
    except Exception as err:  # a broken hook refuses the call; it must not end the turn
        return Refuse(f"{tool.name}: could not check consent ({type(err).__name__}: {err})")
    if shared:  # the owner's data shown to people who are not owners: asked every time
        prompt, always = shared, True
    if hit:
        prompt, always = f"{prompt or f'run {tool.name}'} — it reaches {hit}", True
    if prompt is None and not sources:
        return verdict
    if not ctx.is_owner:
        return Refuse(
            f"{tool.name} needs the owner's consent, which cannot be asked for someone else. "
            "Tell the user only the owner can do this."
        )
    if sources:  # untrusted content raises the bar: an explicit approval, every time
        action = prompt or f"run {tool.name}"
        return Ask(f"{action} — {_untrusted_note(sources)}", scope, True, tuple(sources))
    assert prompt is not None
    if not always:
        if ctx.scheduled:
            return Allow("scheduled by its owner")
        if ctx.interface not in ASKS_ORDINARY_CONSENT:
            return Allow("owner (their message is the consent)")
        if granted(scope):
            return Allow(f"granted for this session ({scope})")
    return Ask(prompt, scope, always)


class Policy:
    """The policy bound to live settings and session grants: what every path calls."""

    def __init__(
        self,
        share: Callable[[], Mapping[str, ShareRule]],
        grants: ConsentStore | None = None,
        protected: ProtectedPaths | None = None,
        workspace: Callable[[], WorkspaceConfig] = lambda: DEFAULT_WORKSPACE,
    ) -> None:
        self._share = share
        self.grants = grants or ConsentStore()
        self.protected = protected
        self._workspace = workspace

    def access(self, tool: BaseTool, ctx: RequestContext | None) -> Decision:
        """Whether this sender may use `tool` at all."""
        return access(tool, ctx, self._share(), self._workspace())

    def decide(
        self, tool: BaseTool, arguments: dict[str, Any], ctx: RequestContext | None
    ) -> Decision:
        """Allow, Refuse or Ask for this call (session grants applied)."""

        def granted(scope: str) -> bool:
            return ctx is not None and self.grants.is_granted(ctx.session_id, scope, ctx.sender_id)

        def reaches(paths: list[str], tree: bool) -> str | None:
            return self.protected.first(paths, tree) if self.protected and paths else None

        return decide(tool, arguments, ctx, self._share(), granted, reaches, self._workspace())

    def may_see_results(self, tool: BaseTool, ctx: RequestContext) -> bool:
        """Whether stored results of `tool` in a shared history are shown to this sender.

        Their own uploads open no one's past results: only the tool use itself decides.
        """
        seen = access(tool, replace(ctx, uploads=()), self._share(), self._workspace())
        return isinstance(seen, Allow)

    def visible(self, tools: Sequence[BaseTool], ctx: RequestContext) -> list[BaseTool]:
        """Only the tools this sender may use are shown to the model (none if that fails)."""
        try:
            share, workspace = self._share(), self._workspace()
        except Exception:  # fail closed: a broken policy input shows no tools, ends no turn
            log.error("policy_visible_failed", exc_info=True)
            return []
        return [t for t in tools if isinstance(access(t, ctx, share, workspace), Allow)]

    def remember(self, ctx: RequestContext, ask: Ask) -> None:
        """The owner said "yes for this session": later calls in `ask.scope` are allowed."""
        if not ask.always:
            self.grants.grant(ctx.session_id, ask.scope, ctx.sender_id)
