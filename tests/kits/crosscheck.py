"""One source, no contradiction: read every output of a cycle back (each engine page, the
At-a-glance table, status.json, the site's index and page documents, the sticky comment, the
audited tracker), parse what each says about an engine's status, pin and measured speed (and
about a tracker row's GitHub status), and list every pair that disagrees.

The parsers read the published text, never watcher's objects, so a template or a context that
tells a different story is caught.
"""

from __future__ import annotations

import html
import json
import re
from dataclasses import dataclass
from pathlib import Path

from watcher.config.model import Config
from watcher.publish.glance import engine_of, engine_pages, find_table

_WORDS = (
    ("ready to test", "ready-to-test"),
    ("blocked", "blocked"),
    ("currently blocked", "blocked"),  # the comment's headline words (publish.context)
    ("validated", "validated"),
    ("regressed", "regressed"),
    ("parked", "parked"),
    ("not checked yet", "unknown"),
    ("not tested yet", "untested"),
)


@dataclass(frozen=True)
class Claim:
    subject: str  # an engine ("vllm"), or a tracker row's link
    field: str  # "status", "pin", "speed" (tokens/s and day) or "github"
    source: str  # where it was read: "page VLLM.md", "status.json", ...
    value: str


def status_of(words: str) -> str | None:
    """A reader headline or a status word -> the status it names ('blocked for 3 days' -> blocked)."""
    w = html.unescape(words).strip().strip("*").lower()
    for prefix, status in _WORDS:
        if w.startswith(prefix) or w == status:
            return status
    return None


def _pins(text: str) -> str:
    return ", ".join(sorted(set(re.findall(r"`([^`]+)`", text))))


MEASURED = re.compile(r"^Measured: ([\d.]+) tokens/s per stream on .+?, (\d{4}-\d\d-\d\d)\.$")


def page_claims(
    engine: str, name: str, text: str, titles: dict[str, str] | None = None
) -> list[Claim]:
    """What a page says: its status, its pin, each recipe's measured speed (`titles`: a
    recipe's title -> its id) and each tracker row's GitHub status."""
    titles = titles or {}
    out = []
    head = re.match(r"^# .+? — (.+?) <!-- volatile -->", text)
    if head:
        out.append(Claim(engine, "status", f"page {name}", str(status_of(head.group(1)))))
    pin = re.search(r"^> Pinned build: (.+)\.$", text, re.M)
    if pin and "`" in pin.group(1):
        out.append(Claim(engine, "pin", f"page {name}", _pins(pin.group(1))))
    recipe = None  # each recipe's measured speed, under its "**title** — for …" line
    for line in text.split("\n"):
        title = re.match(r"^\*\*(.+)\*\* — for ", line)
        if title:
            recipe = titles.get(title.group(1).replace("\\", ""), title.group(1))
        m = MEASURED.match(line)
        if m and recipe:
            out.append(Claim(f"recipe {recipe}", "speed", f"page {name}", f"{m[1]} on {m[2]}"))
    for url, emoji in re.findall(r"^\| \[.*?\]\((\S+?)\) \| .*? \| (\S+) ", text, re.M):
        out.append(Claim(url, "github", f"page {name}", emoji))
    return out


def glance_claims(cfg: Config, text: str) -> list[Claim]:
    lines = text.split("\n")
    span = find_table(lines)
    if span is None:
        return [Claim("*", "status", "glance", "no At-a-glance table")]
    pages = engine_pages(cfg)
    out = []
    for line in lines[span[0] + 2 : span[1] + 1]:
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
        engine = engine_of(cells[0], pages)
        if engine is None:
            continue
        for cell in cells[2:]:
            m = re.match(r"^([\d.]+) tok/s \(.+?, (\d{4}-\d\d-\d\d)\)$", cell)
            if m:
                out.append(Claim(engine, "speed", "glance", f"{m.group(1)} on {m.group(2)}"))
        status, _, pin = cells[1].partition(" · pin ")
        out.append(Claim(engine, "status", "glance", str(status_of(status))))
        if pin:
            out.append(Claim(engine, "pin", "glance", _pins(pin)))
    return out


def status_json_claims(cfg: Config, doc: dict) -> list[Claim]:
    pages = {p.id: e for e, p in engine_pages(cfg).items()}
    out = []
    for p in doc["pages"]:
        engine = pages.get(p["id"])
        if engine is None:
            continue
        out.append(Claim(engine, "status", "status.json", p["status"]))
        names = []
        for r in p["recipes"]:
            v = doc["pins"].get(r) or {}
            if v.get("kind") not in (None, "none"):
                names.append(v.get("ref") or v.get("version") or v.get("reference"))
        if names:
            out.append(Claim(engine, "pin", "status.json", ", ".join(sorted(set(names)))))
        measured = [  # passing runs on target hardware that measured decode speed
            r
            for r in doc["runs"]["smoke"]
            if r["recipe"] in p["recipes"]
            and r["outcome"] == "passed"
            and (r.get("hardware") or {}).get("matches_target")
            and isinstance((r.get("metrics") or {}).get("decode_tokens_per_s"), int | float)
        ]
        newest: dict[str, dict] = {}  # the engine's newest, and each recipe's
        for r in sorted(measured, key=lambda r: r["finished_at"], reverse=True):
            newest.setdefault(engine, r)
            newest.setdefault(f"recipe {r['recipe']}", r)
        for subject, r in newest.items():
            tps = f"{r['metrics']['decode_tokens_per_s']:.1f} on {r['finished_at'][:10]}"
            out.append(Claim(subject, "speed", "status.json", tps))
    return out


def site_claims(cfg: Config, site: Path) -> list[Claim]:
    titles = {p.title: e for e, p in engine_pages(cfg).items()}
    out = []
    index = (site / "index.html").read_text(encoding="utf-8")
    for title, status in re.findall(
        r'<h3><a href="[^"]*">([^<]*)</a> <span class="pill[^"]*">([^<]*)</span></h3>', index
    ):
        engine = titles.get(html.unescape(title))
        if engine:
            out.append(Claim(engine, "status", "site index", status))
    for engine, page in engine_pages(cfg).items():
        doc = site / "page" / f"{page.id}.html"
        if doc.is_file():
            m = re.search(r"<title>[^<]*? — ([^<]*)</title>", doc.read_text(encoding="utf-8"))
            if m:
                out.append(Claim(engine, "status", f"site page/{page.id}.html", m.group(1)))
    return out


def comment_claims(engine: str, body: str) -> list[Claim]:
    out = []
    m = re.search(r"^## .+?: (.+)$", body, re.M)
    if m:
        out.append(Claim(engine, "status", "comment headline", str(status_of(m.group(1)))))
    m = re.search(r"^\*\*([a-z-]+)\*\*", body, re.M)
    if m:
        out.append(Claim(engine, "status", "comment", m.group(1)))
    return out


def tracker_claims(text: str) -> list[Claim]:
    """Each audited row's GitHub status: the computed cell's emoji, per link of the row."""
    out = []
    for line in text.split("\n"):
        m = re.search(r"\| (?:⚠️ \*\*disagrees\*\*: tracker \S+, GitHub )?(\S+) · (.*) \|$", line)
        if not m:
            continue
        for url in re.findall(r"\]\((https://github\.com/\S+?)\)", m.group(2)):
            out.append(Claim(url, "github", "tracker", m.group(1)))
    return out


def disagreements(claims: list[Claim]) -> list[str]:
    """'vllm pin: page VLLM.md says v0.27.1, glance says v0.24.0', for every pair that differs."""
    by: dict[tuple[str, str], list[Claim]] = {}
    for c in claims:
        by.setdefault((c.subject, c.field), []).append(c)
    out = []
    for (subject, field), cs in sorted(by.items()):
        first = cs[0]
        for c in cs[1:]:
            if c.value != first.value:
                out.append(
                    f"{subject} {field}: {first.source} says {first.value!r},"
                    f" {c.source} says {c.value!r}"
                )
    return out


def every_claim(cfg: Config, comments: dict[str, str]) -> list[Claim]:
    """Every output of the last cycle, read back; `comments`: page id -> sticky comment body."""
    claims: list[Claim] = []
    for engine, page in engine_pages(cfg).items():
        path = cfg.resolve(page.output)
        titles = {cfg.recipe(r).title or r: r for r in page.recipes}
        claims += page_claims(engine, path.name, path.read_text(encoding="utf-8"), titles)
        if page.id in comments:
            claims += comment_claims(engine, comments[page.id])
    if cfg.engines is not None and cfg.engines.glance:
        claims += glance_claims(cfg, cfg.resolve(cfg.engines.glance).read_text(encoding="utf-8"))
    doc = json.loads((cfg.site_dir / "status.json").read_text(encoding="utf-8"))
    claims += status_json_claims(cfg, doc)
    claims += site_claims(cfg, cfg.site_dir)
    if cfg.tracker is not None:
        claims += tracker_claims(cfg.resolve(cfg.tracker.output).read_text(encoding="utf-8"))
    return claims
