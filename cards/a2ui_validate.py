"""Checks for hand-written A2UI (`ui_card(messages=...)`), with errors the model can act on.

Exactly one envelope key per message; a `root` component; every reference resolves; every
component reachable from root (orphans are named); literal `\\n` turned into real newlines.
Then a2ui-core's STRICT validator (when installed) checks components against the basic catalog.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from cards.a2ui_catalog import A2UI_VERSION, CATALOG_ID, ENVELOPE_KEYS, strict_errors

SINGLE_REF_KEYS = ("child", "trigger", "content")


def fix_newlines(value: Any) -> Any:
    """Literal backslash-n sequences in every string become real newlines."""
    if isinstance(value, str):
        return value.replace("\\r\\n", "\n").replace("\\n", "\n")
    if isinstance(value, list):
        return [fix_newlines(v) for v in value]
    if isinstance(value, dict):
        return {k: fix_newlines(v) for k, v in value.items()}
    return value


def child_refs(component: dict[str, Any]) -> Iterator[str]:
    """The ids a component references: child, children (list or template), tabs, modal parts."""
    for key in SINGLE_REF_KEYS:
        if isinstance(component.get(key), str):
            yield component[key]
    children = component.get("children")
    if isinstance(children, list):
        yield from (c for c in children if isinstance(c, str))
    elif isinstance(children, dict) and isinstance(children.get("componentId"), str):
        yield children["componentId"]
    for tab in component.get("tabs") or []:
        if isinstance(tab, dict) and isinstance(tab.get("child"), str):
            yield tab["child"]


def _envelope_errors(messages: list[Any]) -> list[str]:
    errors = []
    for i, msg in enumerate(messages):
        if not isinstance(msg, dict):
            errors.append(f"message {i} is not an object")
            continue
        keys = [k for k in ENVELOPE_KEYS if k in msg]
        unknown = sorted(set(msg) - set(ENVELOPE_KEYS) - {"version"})
        if len(keys) != 1:
            found = ", ".join(keys) or "none"
            errors.append(
                f"message {i} must have exactly one of {', '.join(ENVELOPE_KEYS)} (found {found}); "
                "split it into one message per key"
            )
        if unknown:
            errors.append(f"message {i} has unknown keys: {', '.join(unknown)}")
    return errors


def _surface_components(messages: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    surfaces: dict[str, list[dict[str, Any]]] = {}
    for msg in messages:
        update = msg.get("updateComponents")
        if isinstance(update, dict):
            sid = str(update.get("surfaceId", ""))
            comps = update.get("components")
            surfaces.setdefault(sid, []).extend(c for c in comps or [] if isinstance(c, dict))
    return surfaces


def tree_errors(surface: str, comps: list[dict[str, Any]]) -> list[str]:
    """Root present, ids unique, references resolve, nothing orphaned — per surface."""
    where = f"surface {surface!r}: " if surface else ""
    by_id: dict[str, dict[str, Any]] = {}
    errors = []
    for comp in comps:
        cid = comp.get("id")
        if not isinstance(cid, str) or not cid:
            errors.append(f"{where}a component has no id")
        elif cid in by_id:
            errors.append(f"{where}component id {cid!r} is used twice")
        else:
            by_id[cid] = comp
    if "root" not in by_id:
        return [*errors, f'{where}no component has id "root"; the top container must be id "root"']
    dangling = sorted({ref for c in by_id.values() for ref in child_refs(c) if ref not in by_id})
    if dangling:
        errors.append(f"{where}references to missing components: {', '.join(dangling)}")
    reachable, stack = set(), ["root"]
    while stack:
        cid = stack.pop()
        if cid in reachable or cid not in by_id:
            continue
        reachable.add(cid)
        stack.extend(child_refs(by_id[cid]))
    orphans = [cid for cid in by_id if cid not in reachable]
    if orphans:
        errors.append(
            f"{where}components not reachable from root: {', '.join(orphans)} — "
            "list them in a container's children (or child) or remove them"
        )
    return errors


def _add_missing_surfaces(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Prepend createSurface (the basic catalog) for surfaces updated but never created."""
    created = {m["createSurface"].get("surfaceId") for m in messages if "createSurface" in m}
    missing: list[str] = []
    for msg in messages:
        update = msg.get("updateComponents")
        sid = update.get("surfaceId") if isinstance(update, dict) else None
        if isinstance(sid, str) and sid not in created and sid not in missing:
            missing.append(sid)
    creates = [
        {"version": A2UI_VERSION, "createSurface": {"surfaceId": sid, "catalogId": CATALOG_ID}}
        for sid in missing
    ]
    return creates + messages


def _without_version(message: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in message.items() if k != "version"}


def validate_messages(messages: Any) -> tuple[list[dict[str, Any]], list[str]]:
    """(fixed messages, errors); [] errors = valid.

    Fixes: real newlines, the "version" (missing, or a draft's such as "v0.9.1"), a missing
    createSurface.
    """
    if not isinstance(messages, list) or not messages:
        return [], ["messages must be a non-empty list of A2UI messages"]
    errors = _envelope_errors(messages)
    if errors:
        return [], errors
    versioned = [{"version": A2UI_VERSION, **_without_version(m)} for m in messages]
    fixed = _add_missing_surfaces([fix_newlines(m) for m in versioned])
    surfaces = _surface_components(fixed)
    if not surfaces:
        errors.append("no updateComponents message: nothing to show")
    for sid, comps in surfaces.items():
        errors += tree_errors(sid, comps)
    if not errors:
        errors = strict_errors(fixed)
    return (fixed, []) if not errors else ([], errors)
