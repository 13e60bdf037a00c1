"""`lark_task(action, …)`: the asker's own Lark tasks (Tasks v2): list, create, complete."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

from tools.base import ToolResult
from tools.workspace.bitable import zone
from tools.workspace.common import AskerTool, Session, WorkspaceError

TASKS = "/open-apis/task/v2/tasks"
MAX_LISTED = 100


def due_of(value: str, rt_zone: Any) -> dict[str, Any]:
    """`2026-12-24` (all day) or an ISO date-time → Lark's `due` (ms as a string)."""
    text = value.strip()
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise WorkspaceError(
            f"cannot read the due time {value!r}: use 2026-12-24 or 2026-12-24T17:00"
        ) from None
    all_day = len(text) <= 10
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC if all_day else rt_zone)
    return {"timestamp": str(int(moment.timestamp() * 1000)), "is_all_day": all_day}


def _when(due: Any, tz: Any) -> str:
    if not isinstance(due, dict) or not due.get("timestamp"):
        return ""
    moment = datetime.fromtimestamp(int(due["timestamp"]) / 1000, UTC)
    if due.get("is_all_day"):
        return f", due {moment:%Y-%m-%d}"
    return f", due {moment.astimezone(tz):%Y-%m-%d %H:%M}"


async def people(session: Session, names: list[str], asker: str) -> list[str]:
    """Assignees as open_ids: `me`, open_ids as they are, names looked up (one match only)."""
    found: list[str] = []
    for name in names:
        name = str(name).strip()
        if name.lower() in ("me", "myself", "我"):
            found.append(asker)
        elif name.startswith("ou_"):
            found.append(name)
        elif name:
            # Lark's user search (user token only); not generated in lark-oapi 1.7.5, and its
            # scope name is unconfirmed (reference §9): verify on a live tenant
            data = await session.call("GET", "/open-apis/search/v1/user", params={"query": name})
            users = [u for u in data.get("users") or [] if u.get("open_id")]
            exact = [u for u in users if u.get("name") == name] or users
            if len(exact) != 1:
                seen = ", ".join(f"{u.get('name')} ({u['open_id']})" for u in exact[:5])
                raise WorkspaceError(
                    f"{'no one' if not exact else 'several people'} named {name!r}"
                    f"{': ' + seen if seen else ''}; give an open_id"
                )
            found.append(str(exact[0]["open_id"]))
    return list(dict.fromkeys(found))


class TaskTool(AskerTool):
    """`lark_task(action, …)`."""

    name = "lark_task"
    description = (
        "The user's own Lark/Feishu tasks: action=list (open tasks), action=create (summary, "
        "due 2026-12-24 or 2026-12-24T17:00, description, assignees by name or open_id, 'me'), "
        "action=complete (task_id). Creating and completing are confirmed by the user."
    )
    parameters = {  # noqa: RUF012
        "type": "object",
        "properties": {
            "action": {"type": "string", "enum": ["list", "create", "complete"]},
            "summary": {"type": "string"},
            "due": {"type": "string"},
            "description": {"type": "string"},
            "assignees": {"type": "array", "items": {"type": "string"}},
            "task_id": {"type": "string", "description": "the task's guid (from list)"},
        },
        "required": ["action"],
    }
    user_scopes = ("task:task:read", "task:task:write", "contact:user:search")
    subject = "this task"

    def consent_check(self, **kwargs: Any) -> str | None:
        """Creating and completing are writes: the task as it will be."""
        action = kwargs.get("action")
        if action == "complete":
            return f"mark your task {kwargs.get('task_id', '')} as done"
        if action == "create":
            parts = [f"create the task “{kwargs.get('summary', '')}”"]
            if kwargs.get("due"):
                parts.append(f"due {kwargs['due']}")
            if kwargs.get("assignees"):
                parts.append(f"assigned to {', '.join(map(str, kwargs['assignees']))}")
            text = ", ".join(parts)
            if kwargs.get("description"):
                text += f"\n{str(kwargs['description'])[:1000]}"
            return text
        return None

    def consent_always(self, **kwargs: Any) -> bool:
        """Each write is confirmed on its own."""
        return True

    async def precheck(self, session: Session, **kwargs: Any) -> None:
        """Names resolve to one person each and the due time reads, before the card."""
        if kwargs.get("action") == "create":
            self._summary(kwargs)
            if kwargs.get("due"):
                due_of(str(kwargs["due"]), zone(self.rt))
            await people(session, list(kwargs.get("assignees") or []), session.open_id)

    @staticmethod
    def _summary(kwargs: dict[str, Any]) -> str:
        summary = str(kwargs.get("summary") or "").strip()
        if not summary:
            raise WorkspaceError("a task needs a summary")
        return summary

    async def work(self, session: Session, **kwargs: Any) -> str | ToolResult:
        """List, create or complete."""
        action = kwargs.get("action")
        if action == "list":
            return await self._list(session)
        if action == "create":
            return await self._create(session, kwargs)
        if action == "complete":
            guid = str(kwargs.get("task_id") or "").strip()
            if not guid:
                raise WorkspaceError("give the task_id (guid) of the task to complete")
            await session.call(
                "PATCH",
                f"{TASKS}/{guid}",
                params={"user_id_type": "open_id"},
                json={
                    "task": {"completed_at": str(int(time.time() * 1000))},
                    "update_fields": ["completed_at"],
                },
            )
            return f"Task {guid} is done."
        raise WorkspaceError("action must be list, create or complete")

    async def _list(self, session: Session) -> str:
        items = await session.pages(
            "GET",
            TASKS,
            params={
                "type": "my_tasks",
                "completed": "false",
                "page_size": 50,
                "user_id_type": "open_id",
            },
            limit=MAX_LISTED,
        )
        if not items:
            return "You have no open tasks."
        tz = zone(self.rt)
        lines = [f"{len(items)} open task(s):"]
        for task in items:
            lines.append(
                f"- {task.get('summary', '(no summary)')}{_when(task.get('due'), tz)} "
                f"(task_id {task.get('guid', '')})"
            )
        return "\n".join(lines)

    async def _create(self, session: Session, kwargs: dict[str, Any]) -> str:
        body: dict[str, Any] = {"summary": self._summary(kwargs)}
        if kwargs.get("description"):
            body["description"] = str(kwargs["description"])
        if kwargs.get("due"):
            body["due"] = due_of(str(kwargs["due"]), zone(self.rt))
        assignees = await people(session, list(kwargs.get("assignees") or []), session.open_id)
        if assignees:
            body["members"] = [{"id": i, "type": "user", "role": "assignee"} for i in assignees]
        data = await session.call("POST", TASKS, params={"user_id_type": "open_id"}, json=body)
        task = data.get("task") or {}
        made = f"Created the task “{body['summary']}” (task_id {task.get('guid', '')})"
        return f"{made} {task.get('url', '')}".rstrip()
