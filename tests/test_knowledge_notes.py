"""Notes on disk: front matter round trip, slugs, safe `source` paths, no-overwrite creation."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from larkbot.knowledge.notes import (
    KnowledgeError,
    Note,
    create_new,
    parse_note,
    render_note,
    resolve_source,
    slugify,
)


@pytest.fixture(autouse=True)
def _isolated_home(home: Path) -> Path:
    """Every test runs with LARKBOT_HOME in a temp dir."""
    return home


def test_front_matter_round_trip() -> None:
    note = Note(
        title="Redis: 主从切换 — runbook",
        tags=["redis", "运维", "a b"],
        body="# Steps\n\n1. `SENTINEL FAILOVER mymaster`\n\n---\n\nnot front matter",
        created="2024-02-03T10:12:00+08:00",
        updated="2024-05-18T22:40:00+08:00",
        extra={"source_url": "https://example.com", "pinned": True},
    )
    assert parse_note(render_note(note), "x") == note


@settings(max_examples=60, deadline=None)
@given(
    title=st.text(min_size=1, max_size=40).filter(lambda t: " ".join(t.split()) == t != ""),
    tags=st.lists(
        st.text(min_size=1, max_size=10).filter(lambda t: " ".join(t.split()).strip("#,") == t)
    ),
    body=st.text(max_size=200).map(lambda b: b.strip()),
)
def test_round_trip_property(title: str, tags: list[str], body: str) -> None:
    note = Note(title=title, tags=list(dict.fromkeys(tags)), body=body, created="c", updated="u")
    back = parse_note(render_note(note), "fallback")
    assert (back.title, back.tags, back.body) == (note.title, note.tags, body.replace("\r\n", "\n"))


def test_hand_written_notes_are_read_leniently() -> None:
    plain = parse_note("# 周报\n\n本周完成了迁移。\n", "weekly")
    assert (plain.title, plain.tags, plain.body) == ("周报", [], "# 周报\n\n本周完成了迁移。")
    dated = parse_note("---\ntitle: T\ntags: a,  b \ncreated: 2024-01-02 03:04:05\n---\nbody", "x")
    assert dated.tags == ["a", "b"] and dated.created.startswith("2024-01-02T03:04:05")
    assert parse_note("---\ntags: ['#x', x, 2]\n---\n", "s").tags == ["x", "2"]
    broken = parse_note("---\ntitle: [unclosed\n---\nbody", "stem")
    assert broken.title == "stem" and "unclosed" in broken.body
    assert parse_note("no header", "stem").title == "stem"


@pytest.mark.parametrize(
    ("title", "slug"),
    [
        ("Redis 主从切换", "redis-主从切换"),
        ("../../etc/passwd", "etc-passwd"),
        ("..", "note"),
        ("  ", "note"),
        (".hidden", "hidden"),
        ("a/b\\c:d*e?f", "a-b-c-d-e-f"),
        ("Ｆｕｌｌｗｉｄｔｈ", "fullwidth"),
        ("x\x00y\nz", "x-y-z"),
    ],
)
def test_slug_is_a_safe_file_name(title: str, slug: str) -> None:
    assert slugify(title) == slug


@given(st.text(max_size=300))
def test_slug_never_escapes(title: str) -> None:
    slug = slugify(title)
    assert slug and "/" not in slug and "\\" not in slug and not slug.startswith(".")
    assert "\x00" not in slug and len(slug.encode()) <= 240


def test_create_new_never_overwrites(tmp_path: Path) -> None:
    root = tmp_path / "kb"
    root.mkdir()
    first = create_new(root, "note", "one")
    second = create_new(root, "note", "two")
    third = create_new(root, "note", "three")
    assert [p.name for p in (first, second, third)] == ["note.md", "note-2.md", "note-3.md"]
    assert first.read_text() == "one" and third.read_text() == "three"
    assert sorted(p.name for p in root.iterdir()) == ["note-2.md", "note-3.md", "note.md"]


@pytest.fixture
def kb_dir(tmp_path: Path) -> Path:
    root = tmp_path / "knowledge"
    (root / "sub").mkdir(parents=True)
    (root / "a.md").write_text("a")
    (root / "sub" / "b.md").write_text("b")
    (tmp_path / "secret.md").write_text("outside")
    return root


def test_sources_inside_resolve(kb_dir: Path) -> None:
    real = kb_dir.resolve()
    assert resolve_source(kb_dir, "a.md") == real / "a.md"
    assert resolve_source(kb_dir, "sub/b.md") == real / "sub" / "b.md"
    assert resolve_source(kb_dir, str(kb_dir / "sub" / "b.md")) == real / "sub" / "b.md"
    assert resolve_source(kb_dir, "sub/../a.md") == real / "a.md"
    os.symlink(kb_dir / "a.md", kb_dir / "alias.md")  # a link that stays inside is fine
    assert resolve_source(kb_dir, "alias.md") == real / "a.md"


@pytest.mark.parametrize(
    "source", ["../secret.md", "sub/../../secret.md", "/etc/passwd", "", "a\x00.md", "."]
)
def test_escapes_are_refused(kb_dir: Path, source: str) -> None:
    with pytest.raises(KnowledgeError):
        resolve_source(kb_dir, source)


def test_absolute_path_elsewhere_refused(kb_dir: Path) -> None:
    with pytest.raises(KnowledgeError, match="outside the knowledge directory"):
        resolve_source(kb_dir, str(kb_dir.parent / "secret.md"))


def test_symlink_out_refused(kb_dir: Path) -> None:
    os.symlink(kb_dir.parent / "secret.md", kb_dir / "link.md")
    os.symlink(kb_dir.parent, kb_dir / "linkdir")
    with pytest.raises(KnowledgeError, match="symlink leading outside"):
        resolve_source(kb_dir, "link.md")
    with pytest.raises(KnowledgeError, match="symlink leading outside"):
        resolve_source(kb_dir, "linkdir/secret.md")


def test_non_markdown_refused(kb_dir: Path) -> None:
    (kb_dir / "notes.txt").write_text("x")
    with pytest.raises(KnowledgeError, match=r"not a Markdown"):
        resolve_source(kb_dir, "notes.txt")
