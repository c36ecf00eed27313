"""The bisect grid: an engine's published builds between two refs, each checked to still exist.

What can be tested is what the engine published, not every commit. The grid comes from GitHub:
the compare API lists the commits between the two refs (oldest first); `[recipe.source] every`
says which of them have a build (each release tag, each commit, or the last commit of each UTC
day, as nightlies are built), and the source's template names each build. Every point is then
checked to exist before any run: an image by one anonymous `HEAD` of its manifest on the
registry (poll.registry, no docker needed; `docker manifest inspect` only where the registry
refuses an anonymous read, for a private image), a wheel on its package index. A purged build
(a 404) is marked gone and the search steps around it; a registry that cannot say stops the
bisect before it starts.
"""

from __future__ import annotations

import json
import logging
import re
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import Any
from urllib.parse import quote

from watcher.config.model import Source
from watcher.config.pins import parse_image
from watcher.core.errors import WatcherError
from watcher.poll.poller import gather
from watcher.poll.registry import Registry, RegistryError, Unreachable
from watcher.smoke.launch import docker

log = logging.getLogger("watcher.bisect")

MAX_COMPARE_COMMITS = 250  # what one compare answer lists; a longer range must be narrowed


@dataclass
class Point:
    """One build of the grid."""

    index: int
    build: str  # image:tag or the pip requirement
    sha: str
    date: str | None
    tag: str | None = None
    version: str | None = None
    url: str | None = None  # the commit on GitHub
    digest: str | None = None  # the image's manifest digest, when known
    gone: str | None = None  # why it cannot be tested (it does not exist), or None
    unchecked: str | None = None  # why its existence could not be told (the check failed)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Grid:
    points: list[Point]
    compare_url: str | None
    commits: list[dict[str, Any]] = field(default_factory=list)  # compare's, oldest first

    @property
    def gone(self) -> list[Point]:
        return [p for p in self.points if p.gone]

    @property
    def unchecked(self) -> list[Point]:
        return [p for p in self.points if p.unchecked]


def _date(commit: dict[str, Any]) -> str | None:
    c = commit.get("commit") or {}
    return (c.get("committer") or {}).get("date") or (c.get("author") or {}).get("date")


def values_for(sha: str, date: str | None, tag: str | None) -> dict[str, str]:
    """What a template can name: {version} {tag} {sha} {sha8} {date}."""
    return {
        "sha": sha,
        "sha8": sha[:8],
        "date": re.sub(r"\D", "", (date or "")[:10]),
        "tag": tag or "",
        "version": (tag or "").removeprefix("v"),
    }


def _prefix(tag: str) -> str:
    m = re.match(r"^\D*", tag)
    return m.group(0) if m else ""


def build_grid(source: Source, old_ref: str, new_ref: str, client) -> Grid:
    """The builds from `old_ref` to `new_ref` (both included, oldest first). No existence check."""
    repo = source.repo
    data = client.get_json(
        f"/repos/{repo}/compare/{quote(old_ref, safe='')}...{quote(new_ref, safe='')}"
    )
    status = data.get("status")
    if status != "ahead":
        raise WatcherError(
            f"{repo}: {new_ref} is not after {old_ref} (compare says {status!r}); give the older"
            " build first"
        )
    commits = list(data.get("commits") or [])
    total = data.get("total_commits") or len(commits)
    if total > len(commits) or total > MAX_COMPARE_COMMITS:
        raise WatcherError(
            f"{repo}: {old_ref}...{new_ref} spans {total} commits; compare lists at most"
            f" {MAX_COMPARE_COMMITS}: narrow the range (a closer --good or --bad)"
        )
    base = data.get("base_commit") or {}
    line = [base, *commits]  # oldest first
    points: list[Point] = []
    if source.every == "release":
        tags: dict[str, list[str]] = {}
        for t in client.paginate(f"/repos/{repo}/tags", {"per_page": 100}):
            tags.setdefault(t["commit"]["sha"], []).append(t["name"])
        named = {old_ref: line[0]["sha"], new_ref: line[-1]["sha"]}
        for ref, sha in named.items():
            if ref not in tags.get(sha, []):
                raise WatcherError(
                    f"{repo}: {ref} is not a release tag; with every = 'release' give tags"
                )
        prefix = _prefix(old_ref)
        for c in line:
            candidates = [
                t for t in tags.get(c["sha"], ()) if _prefix(t) == prefix and t[len(prefix) :]
            ]
            if c is line[0]:
                candidates = [old_ref]
            elif c is line[-1]:
                candidates = [new_ref]
            for tag in sorted(candidates)[:1]:
                points.append(_point(source, len(points), c, tag))
    elif source.every == "commit":
        points = [_point(source, i, c, None) for i, c in enumerate(line)]
    else:  # day: a nightly is built from the last commit of its day
        chosen = [line[0]]
        for c in line[1:]:
            day = (_date(c) or "")[:10]
            if len(chosen) > 1 and (_date(chosen[-1]) or "")[:10] == day:
                chosen[-1] = c
            else:
                chosen.append(c)
        points = [_point(source, i, c, None) for i, c in enumerate(chosen)]
    return Grid(points, data.get("html_url"), commits)


def _point(source: Source, index: int, commit: dict[str, Any], tag: str | None) -> Point:
    sha = commit["sha"]
    date = _date(commit)
    values = values_for(sha, date, tag)
    return Point(
        index=index,
        build=source.build(values),
        sha=sha,
        date=date,
        tag=tag,
        version=values["version"] or values["sha8"],
        url=commit.get("html_url"),
    )


# ------------------------------------------------------------------ does each build exist?


def manifest_digest(image: str) -> tuple[str | None, str | None]:
    """(digest, None) when the registry has `image`, else (None, why)."""
    try:
        r = docker(["manifest", "inspect", "--verbose", image], timeout=60.0)
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, f"docker manifest inspect failed: {e}"
    if r.returncode != 0:
        return None, (r.stderr or r.stdout).strip()[:200] or f"exit {r.returncode}"
    try:
        data = json.loads(r.stdout)
    except json.JSONDecodeError:
        return "", None  # it exists; the digest is unreadable
    first = data[0] if isinstance(data, list) and data else data
    desc = first.get("Descriptor") if isinstance(first, dict) else None
    return (desc or {}).get("digest") or "", None


def _index_files(index: str, project: str, client) -> set[str] | str:
    """The file names a PEP 503 simple index lists for `project`, or why it cannot be read."""
    url = f"{index.rstrip('/')}/{re.sub(r'[-_.]+', '-', project).lower()}/"
    try:
        r = client.get(url, timeout=20.0, follow_redirects=True)
    except Exception as e:  # noqa: BLE001 (httpx raises many kinds; each is "cannot read")
        return f"cannot read the index {url}: {e}"
    if r.status_code != 200:
        return f"the index {url} answered HTTP {r.status_code}"
    return {m.split("#")[0].rsplit("/", 1)[-1] for m in re.findall(r'href="([^"]+)"', r.text)}


def _wheel_check(source: Source, points: list[Point]) -> None:
    import httpx

    with httpx.Client() as http:
        listings: dict[str, set[str] | str] = {}
        for p in points:
            req = p.build
            if " @ " in req:  # a direct URL: it must answer
                url = req.split(" @ ", 1)[1].strip()
                try:
                    r = http.head(url, timeout=20.0, follow_redirects=True)
                except httpx.HTTPError as e:
                    p.unchecked = f"{url}: {e}"
                    continue
                if r.status_code in (404, 410):
                    p.gone = f"{url} answered {r.status_code}"
                elif r.status_code != 200:
                    p.unchecked = f"{url} answered {r.status_code}"
                continue
            m = re.match(r"^\s*([A-Za-z0-9_.-]+)\s*==\s*([^\s;]+)", req)
            if not m:
                p.unchecked = f"cannot check {req!r}: use 'name==version' or 'name @ URL'"
                continue
            project, version = m.groups()
            if not source.index:
                p.unchecked = "no [recipe.source] index to check the wheel against"
                continue
            files = listings.get(project)
            if files is None:
                files = listings[project] = _index_files(source.index, project, http)
            if isinstance(files, str):
                p.unchecked = files
                continue
            stem = re.sub(r"[-_.]+", "_", project).lower()
            ok = any(f.lower().startswith(f"{stem}-{version.lower()}") for f in files) or any(
                f.lower().startswith(f"{project.lower()}-{version.lower()}") for f in files
            )
            p.gone = None if ok else f"{project} {version} is not on {source.index}"
            p.digest = None


def _image_check(p: Point, registry: Registry) -> None:
    """One HEAD on the registry: a 404 is gone; a refusal falls back to docker's credentials."""
    parsed = parse_image(p.build)
    if isinstance(parsed, str):
        p.unchecked = f"not an image reference: {parsed}"
        return
    host, name, tag, digest = parsed
    ref = digest or tag or "latest"
    try:
        head = registry.head(host, name, ref)
    except Unreachable as e:
        p.unchecked = f"the registry did not answer: {e}"
        return
    except RegistryError as e:
        if shutil.which("docker") is None:
            p.unchecked = f"the registry refused an anonymous read: {e}"
            return
        p.digest, why = manifest_digest(p.build)  # a private image: docker's login may read it
        if why is not None:
            p.unchecked = f"the registry refused ({e}) and docker manifest inspect: {why}"
        return
    if head.exists:
        p.digest = head.digest
    else:
        p.gone = f"{host}/{name}:{ref} answered 404 (no such manifest: purged or never built)"


def check_points(
    source: Source, points: list[Point], workers: int = 8, registry: Registry | None = None
) -> None:
    """Set each point's `digest` (an image's), `gone` (a 404: it does not exist) or `unchecked`
    (the check could not tell), in place."""
    if source.requirement:
        _wheel_check(source, points)
        return
    own = registry is None
    reg = registry or Registry()
    # Ctrl-C may land on a worker thread: wait in slices (poll.poller.gather) and, once
    # interrupted, start nothing more and drop the checks in flight instead of waiting them out.
    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="bisect-check")
    interrupted = False
    try:
        gather(pool, lambda p: _image_check(p, reg), points)
    except KeyboardInterrupt:
        interrupted = True
        raise
    finally:
        pool.shutdown(wait=not interrupted, cancel_futures=interrupted)
        if own:
            reg.close()
