"""Document comments as text: the question in a thread, the model's prompt, the reply's text."""

from __future__ import annotations

from typing import Any

from larkbot.lark.api.client import as_object
from larkbot.lark.delivery.turns import TOOK_TOO_LONG, sorry

REPLY_CHARS = 1000  # a comment reply stays short; Lark renders it as plain rich text
SHORTENED = "… (shortened: ask me in a direct message for the whole answer)"
TIMED_OUT = sorry(TOOK_TOO_LONG)  # as a chat turn says it


def reply_text(reply: dict[str, Any]) -> str:
    """A reply's elements as text: text runs, links, @people (as @open_id)."""
    parts = []
    for element in as_object(reply.get("content")).get("elements") or []:
        e = as_object(element)
        if e.get("type") == "text_run":
            parts.append(str(as_object(e.get("text_run")).get("text") or ""))
        elif e.get("type") == "docs_link":
            parts.append(str(as_object(e.get("docs_link")).get("url") or ""))
        elif e.get("type") == "person":
            parts.append("@" + str(as_object(e.get("person")).get("user_id") or ""))
    return "".join(parts).strip()


def question_of(comment: dict[str, Any], reply_id: str, open_id: str) -> str:
    """The reply that mentioned the bot, else the commenter's latest one in the thread."""
    replies = [as_object(r) for r in as_object(comment.get("reply_list")).get("replies") or []]
    for r in replies:
        if reply_id and r.get("reply_id") == reply_id:
            return reply_text(r)
    mine = [r for r in replies if r.get("user_id") == open_id]
    return reply_text(mine[-1]) if mine else ""


def prompt_for(
    question: str, quote: str, doc: tuple[str, str], document: str | None, user_token: str
) -> str:
    """What the model reads: the question, the quoted passage and the document (or why not).

    `doc`: the document's (file_type, file_token)."""
    lines = [
        f"Someone @-mentioned you in a comment on a Lark document ({doc[0]} {doc[1]}). "
        "Answer their question briefly; your answer is posted as a reply "
        "in that comment thread (plain text, no tables).",
        f"Their comment: {question or '(empty)'}",
    ]
    if quote:
        lines.append(f"The passage the comment is on:\n<<<\n{quote[:2000]}\n>>>")
    if document:
        lines.append(f"The document's text (read with their authorization):\n<<<\n{document}\n>>>")
    elif not user_token:
        lines.append(
            "Only the comment is available: this person has not authorized you to read "
            "documents as them (they can send /auth to the bot), so the document was not read."
        )
    else:
        lines.append("The document's text could not be read; answer from the comment alone.")
    return "\n\n".join(lines)


def answer_text(text: str) -> str:
    """The reply: the answer, shortened with a pointer past REPLY_CHARS."""
    text = text.strip() or "(no answer)"
    if len(text) <= REPLY_CHARS:
        return text
    return text[: REPLY_CHARS - len(SHORTENED)].rstrip() + SHORTENED
