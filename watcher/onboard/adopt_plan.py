"""What adopting a hand-kept page keeps, as files to write: pure, so `--dry-run` and the real
adoption plan the same thing.

Every word stays on the page: the H1 becomes `title.md` (`title-<status>.md` when it names a
status), the line under watcher's headline; the introduction becomes `intro.md`; its status
paragraph ("Status (2026-05-21): PARKED …") becomes `status-<status>.md`, shown while the page
has that status and replaced by the template's sentence once evidence says otherwise; every H2 section, heading
included, becomes `adopted-NN-<slug>.md`, shown in the hand page's order. A page that says
PARKED with a date becomes a `[page.park]` with that reason and `since` (blocked, experimental or
validated: a `[page.override]`, by adopt.py), so the first generated page says the same.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date

# the hand page's status word -> watcher's page status (the fragment is shown while it holds)
STATUS_WORDS = {
    "parked": "parked",
    "blocked": "blocked",
    "experimental": "ready-to-test",
    "validated": "validated",
}

_STATUS_LINE = re.compile(
    r"\bstatus\b[^\n]{0,40}?(?:"
    r"(?P<d1>\d{4}-\d{2}-\d{2})[^\n]{0,16}?\b(?P<w1>parked|blocked|experimental|validated)\b"
    r"|\b(?P<w2>parked|blocked|experimental|validated)\b[^\n]{0,16}?(?P<d2>\d{4}-\d{2}-\d{2}))",
    re.IGNORECASE,
)


_TITLE_WORD = re.compile(r"\b(parked|blocked|experimental|validated)\b", re.IGNORECASE)


@dataclass(frozen=True)
class HandStatus:
    """The status the hand page gives itself, in its own paragraph."""

    word: str  # watcher's page status: parked, blocked, ready-to-test, validated
    since: date
    reason: str
    paragraph: str


@dataclass
class Plan:
    """Fragments to write (name -> text, in page order) and the status the page says."""

    fragments: dict[str, str] = field(default_factory=dict)
    status: HandStatus | None = None


def split_sections(text: str) -> tuple[str, list[tuple[str, str]]]:
    """(intro, [(heading line, body)]) of a Markdown page: the intro is what follows the H1 up to
    the first H2 or `---` rule; each H2 section runs to the next H2 (rules and blank edges
    dropped: they separate, they say nothing)."""
    lines = text.splitlines()
    if lines and lines[0].startswith("# "):
        lines = lines[1:]
    intro: list[str] = []
    sections: list[tuple[str, list[str]]] = []
    in_intro = True
    for line in lines:
        if line.startswith("## "):
            in_intro = False
            sections.append((line.rstrip(), []))
        elif in_intro:
            if line.strip() in ("---", "***", "___"):
                in_intro = False
                continue
            intro.append(line)
        elif sections:
            sections[-1][1].append(line)
        elif line.strip() not in ("---", "***", "___"):
            intro.append(line)  # prose between a rule and the first H2 is still the intro's
    body = [
        (h, "\n".join(x for x in b if x.strip() not in ("---", "***", "___")).strip())
        for h, b in sections
    ]
    return "\n".join(intro).strip(), body


def slug(heading: str) -> str:
    words = re.sub(r"^#+\s*", "", heading).lower()
    return re.sub(r"[^a-z0-9]+", "-", words)[:40].strip("-") or "section"


def hand_status(intro: str) -> HandStatus | None:
    """The intro's own status paragraph, when it names a status word and a date."""
    for para in re.split(r"\n\s*\n", intro):
        m = _STATUS_LINE.search(para)
        if not m:
            continue
        word = (m.group("w1") or m.group("w2")).lower()
        since = date.fromisoformat(m.group("d1") or m.group("d2"))
        rest = re.sub(r"[*_`]", "", para[m.end() :]).lstrip(" .:—-)")
        reason = " ".join(rest.split())
        first = re.match(r"(.+?[.!?])(\s|$)", reason)
        reason = (first.group(1) if first else reason)[:300].rstrip(" .")
        reason = reason or f"{word} on the hand-kept page since {since}"
        return HandStatus(STATUS_WORDS[word], since, reason, para.strip())
    return None


def title_fragment(title: str) -> str:
    """`title-<status>` for an H1 that names a status word (shown only while the page has that
    status), else `title`."""
    m = _TITLE_WORD.search(title)
    return f"title-{STATUS_WORDS[m.group(1).lower()]}" if m else "title"


def plan_adoption(text: str) -> Plan:
    """Every word of the hand page as fragments, and the status it says of itself."""
    intro, sections = split_sections(text)
    plan = Plan()
    first = text.splitlines()[0] if text.strip() else ""
    if first.startswith("# ") and first[2:].strip():
        plan.fragments[title_fragment(first[2:].strip())] = first[2:].strip()
    status = hand_status(intro) if intro else None
    if status:
        before, _, after = intro.partition(status.paragraph)
        plan.status = status
        if before.strip():
            plan.fragments["intro"] = before.strip()
        plan.fragments[f"status-{status.word}"] = status.paragraph
        intro = after.strip()
        if intro:  # the rest of the intro, after the status paragraph, stays after it
            sections.insert(0, ("", intro))
    elif intro:
        plan.fragments["intro"] = intro
    width = max(2, len(str(len(sections))))
    for n, (heading, body) in enumerate(sections, 1):
        name = f"adopted-{n:0{width}d}-{slug(heading) if heading else 'intro'}"
        plan.fragments[name] = f"{heading}\n\n{body}".strip() if heading else body
    return plan
