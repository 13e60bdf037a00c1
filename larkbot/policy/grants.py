"""Session consent grants ("yes for this session"), keyed by scope and by who said yes.

A scope is what one grant covers, declared by the tool's `consent_scope`:
- a tool name (`shell`): exactly that name;
- an absolute path (`/home/me/notes`): that path and its subtree;
- an origin (`https://example.com`, scheme://host[:port]): every URL of that origin, the
  browser's analogue of a directory subtree (`https://example.com/a?b` is covered; another
  scheme, host or port is not).
"""

from __future__ import annotations

import posixpath
from urllib.parse import urlsplit


def _origin(scope: str) -> str | None:
    """`scheme://host[:port]` of a URL scope, lower-cased; None when `scope` is not a URL."""
    if "://" not in scope:
        return None
    try:
        parts = urlsplit(scope)
    except ValueError:
        return None
    if not parts.scheme or not parts.netloc:
        return None
    return f"{parts.scheme}://{parts.netloc}".lower()


def scope_covers(granted: str, scope: str) -> bool:
    """True when a grant of `granted` covers `scope`: equal, a subtree path, or the same origin."""
    if granted == scope:
        return True
    if granted.startswith("/") and scope.startswith("/"):
        root = posixpath.normpath(granted)
        target = posixpath.normpath(scope)
        return target == root or target.startswith(root.rstrip("/") + "/")
    origin = _origin(granted)
    if origin is not None and origin == granted.lower().rstrip("/"):
        return _origin(scope) == origin
    return False


class ConsentStore:
    """Session grants in memory (never on disk), keyed by consent scope and by who granted.

    A grant covers the calls of the person who gave it: in a shared session (a Lark group) a
    member the owner shared a tool with must not ride on the owner's "yes".
    """

    def __init__(self) -> None:
        self._grants: dict[str, dict[str, set[str]]] = {}

    def grant(self, session_id: str, scope: str, who: str) -> None:
        """Remember that `scope` is allowed for `who` for the rest of the session."""
        self._grants.setdefault(session_id, {}).setdefault(who, set()).add(scope)

    def is_granted(self, session_id: str, scope: str, who: str) -> bool:
        """True when a grant `who` gave in this session covers `scope`."""
        granted = self._grants.get(session_id, {}).get(who, ())
        return any(scope_covers(g, scope) for g in granted)

    def clear_session_grants(self, session_id: str) -> None:
        """Forget every grant of a session (when it is deleted or reset)."""
        self._grants.pop(session_id, None)
