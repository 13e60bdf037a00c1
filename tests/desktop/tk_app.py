"""A small real X client for the computer_use tests: a red button, a yellow entry, a blue canvas.

Prints one JSON line of its whole state whenever anything changes (the test reads stdout):
{"label", "entry", "drag": [[x, y], ...] while button 1 is held, "chords": [...], "ready"}.
"""

from __future__ import annotations

import json
import sys
import tkinter as tk

root = tk.Tk()
root.geometry("500x400+0+0")
state: dict[str, object] = {
    "label": "Press me",
    "entry": "",
    "drag": [],
    "chords": [],
    "ready": False,
}


def emit() -> None:
    """Write the state as one line."""
    sys.stdout.write(json.dumps(state, ensure_ascii=False) + "\n")
    sys.stdout.flush()


clicks = 0


def pressed() -> None:
    global clicks
    clicks += 1
    state["label"] = f"Clicked {clicks}"
    button.configure(text=state["label"])
    emit()


button = tk.Button(root, text="Press me", bg="#ff0000", activebackground="#ff0000",
                   command=pressed, width=12, height=2)  # fmt: skip
button.place(x=300, y=40)
text = tk.StringVar()
entry = tk.Entry(root, textvariable=text, bg="#ffff00", width=30)
entry.place(x=20, y=140)


def changed(*_: object) -> None:
    state["entry"] = text.get()
    emit()


text.trace_add("write", changed)
canvas = tk.Canvas(root, width=300, height=150, bg="#0000ff", highlightthickness=0)
canvas.place(x=20, y=220)


def press(event: tk.Event) -> None:
    state["drag"] = [[event.x, event.y]]


def motion(event: tk.Event) -> None:
    state["drag"].append([event.x, event.y])  # type: ignore[attr-defined]


def release(event: tk.Event) -> None:
    state["drag"].append([event.x, event.y])  # type: ignore[attr-defined]
    state["released"] = [event.x, event.y]
    emit()


canvas.bind("<ButtonPress-1>", press)
canvas.bind("<B1-Motion>", motion)
canvas.bind("<ButtonRelease-1>", release)


def chord(name: str) -> None:
    state["chords"].append(name)  # type: ignore[attr-defined]
    emit()


root.bind_all("<Control-Shift-K>", lambda e: chord("ctrl+shift+k"))
root.bind_all("<Control-k>", lambda e: chord("ctrl+k"))


def ready() -> None:
    state["ready"] = True
    emit()


root.update()  # no window manager: mapped at once; the test still waits to see the colours
ready()
root.mainloop()
