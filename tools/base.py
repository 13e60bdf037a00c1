"""BaseTool, the one interface every tool implements, and ToolResult."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from larkbot.context import RequestContext
    from larkbot.sources import Source

ALL_INTERFACES: frozenset[str] = frozenset({"cli", "web", "lark"})


@dataclass(frozen=True)
class Attachment:
    """A file a tool produced for the user (a screenshot, a report): delivered by the channel.

    `kind` "image" is sent as an image message in Lark (and may reach the model when
    `llm.vision` allows); "file" as a file message. `path` is a local file the tool wrote.
    """

    path: str
    kind: Literal["image", "file"] = "file"
    mime: str = "application/octet-stream"
    caption: str = ""


@dataclass(frozen=True)
class ToolResult:
    """What a tool call produced: text for the model, an error flag, a UI payload, attachments.

    `sources` names text in `content` that no owner wrote, when this call's result holds some
    (a downloaded file read, a network command's output): it raises the bar like
    `untrusted_output` does, for as long as the result stays in the history.
    """

    content: str
    is_error: bool = False
    ui: dict[str, Any] | None = None
    attachments: tuple[Attachment, ...] = ()
    sources: tuple[Source, ...] = ()


class BaseTool(ABC):
    """A tool the model can call. Subclass, set the attributes, implement `run`.

    What kind of tool it is (read by `larkbot.policy`, the one place that decides):
    `side_effect` tools change the world (owners only, never shareable); `private_data` tools
    read the owner's machine or data (owners only unless `owner.share` opens them); neither
    means read-only (anyone); `untrusted_output` tools return text no owner wrote (web pages,
    other people's messages), after which the session's side effects need the owner's approval
    (`untrusted_kind` says whose text, a `larkbot.policy.provenance.Kind` value; a result can
    also name its own `ToolResult.sources`); `share_check` names a call that shows the owner's
    data to people who are not owners (asked every time);
    `consent_check` / `consent_scope` / `consent_always` say when a call needs a yes;
    `touched_paths` names the files a call reads or writes (the bot's own are always asked).
    `untrusted_bar` says which of the turn's untrusted sources make this call need approval.
    `private_to_caller` results (memory) reach only the turns of the person who called the tool;
    `acts_as_asker` tools act in Lark as the person who asks, with that person's own
    authorization (never the owner's, never the bot's): `workspace.members` decides who may use
    them, and a call whose `consent_check` describes a change is confirmed by the asker alone.
    `no_compress` results reach the model verbatim; `interfaces` is the design doc's
    registration table row; `fast_path` tools are advertised in the short fast-path prompt.
    A tool that needs to know who calls it subclasses `ContextTool` instead.
    """

    name: str
    description: str
    parameters: dict[str, Any] = {"type": "object", "properties": {}}  # noqa: RUF012
    fast_path: bool = False
    side_effect: bool = False
    private_data: bool = False
    untrusted_output: bool = False
    untrusted_kind: str = "tool"  # a provenance Kind value: "web", "person", "tool"
    acts_as_asker: bool = False
    searches_trees: bool = False  # `touched_paths` are roots searched recursively (rg, fd)
    no_compress: bool = False
    # results about the caller (memory): in a shared history, hidden from everyone else's turns
    private_to_caller: bool = False
    interfaces: frozenset[str] = ALL_INTERFACES
    timeout: float | None = None  # per-tool override of the executor's default
    # The argument naming the one local file a read-only call reads (file_read: "path"); the
    # policy lets a non-owner read their own uploads of this turn through such a tool.
    read_path_argument: str | None = None

    @abstractmethod
    async def run(self, **kwargs: Any) -> str | ToolResult:
        """Do the work; return text for the model (or a ToolResult with a UI payload)."""

    async def invoke(self, ctx: RequestContext, arguments: dict[str, Any]) -> str | ToolResult:
        """How the executor runs a call: with its context. Plain tools ignore it and `run`."""
        return await self.run(**arguments)

    async def aclose(self) -> None:
        """Release what the tool holds (its own clients, a browser); most hold nothing."""
        return None

    def consent_check(self, **kwargs: Any) -> str | None:
        """A sentence describing the action when it needs the user's consent, else None."""
        return None

    def consent_scope(self, **kwargs: Any) -> str:
        """What a grant covers; a path scope also covers its subtree."""
        return self.name

    def consent_always(self, **kwargs: Any) -> bool:
        """True for dangerous calls that must be asked every time and never remembered."""
        return False

    async def check_before_asking(
        self, ctx: RequestContext, arguments: dict[str, Any]
    ) -> str | None:
        """Why this call cannot run, found before anyone is asked (an error; no card)."""
        return None

    def touched_paths(self, **kwargs: Any) -> list[str]:
        """Filesystem paths this call reads or writes (the policy guards the bot's own files)."""
        return []

    def share_check(self, ctx: RequestContext, **kwargs: Any) -> str | None:
        """A sentence when this call shows the owner's data to someone not an owner, else None."""
        return None

    def untrusted_bar(self, untrusted: tuple[str, ...], **kwargs: Any) -> tuple[str, ...]:
        """The untrusted sources that make this call need an explicit approval (side effects)."""
        return untrusted if self.side_effect else ()

    def openai_schema(self) -> dict[str, Any]:
        """This tool in the OpenAI Chat Completions `tools` format."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }


class ContextTool(BaseTool):
    """A tool that needs the caller's context (who, where): implement `run_with(ctx, **kw)`.

    The context arrives as an argument (as pydantic-ai's `RunContext`), never from ambient
    state; called without one (`run`), the tool refuses.
    """

    async def run(self, **kwargs: Any) -> str | ToolResult:
        """Without a context nothing runs: fail closed."""
        return ToolResult(f"{self.name} was called without a request context; refused", True)

    async def invoke(self, ctx: RequestContext, arguments: dict[str, Any]) -> str | ToolResult:
        """Run with the call's context."""
        return await self.run_with(ctx, **arguments)

    @abstractmethod
    async def run_with(self, ctx: RequestContext, **kwargs: Any) -> str | ToolResult:
        """Do the work for the caller described by `ctx`."""
