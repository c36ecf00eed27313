"""Reading an item's state from GitHub.

The state words it writes, and what they mean, live in `watcher.judge.states`. Closed is not fixed: a
closed PR is searched for a superseding merged PR, and a merged fix is located in the first release
that contains it (compare API, never dates).

Rules must notice when they go blind: every watched path is checked against the tip of the ref it
is read at (one tree read per repository and ref), and a commit stream either reads back to
`since` or says how far back it read. The matching and reading functions are plain functions so
`watcher backtest` replays history through the very same code.

Why one file of ~650 lines: one state reader per item kind (issue, pull, commits, releases, code)
plus the shared path checks; they share the rules above and the backtest imports them as one set.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import threading
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from watcher.config.model import Item
from watcher.core.errors import GitHubError
from watcher.core.text import storable
from watcher.poll import moves, relevance, textmatch, trust
from watcher.poll.events_feed import KINDS as FEED_KINDS
from watcher.poll.events_feed import EventsFeed
from watcher.poll.heads import HeadRead, Heads, Tip, dead_paths, head_sha, resolve_ref

if TYPE_CHECKING:  # `status` and `explain` evaluate items without loading httpx
    from watcher.github.client import GitHubClient

MAX_COMMITS_SHOWN = 20
MAX_LINES_SHOWN = 20
MAX_CODE_FILE_BYTES = 7 * 1024 * 1024  # base64 of it (4/3) fits github.MAX_BODY_BYTES
MAX_STREAM_PAGES = 50  # a commit stream with no max_pages: 5,000 commits a path, then a warning


SLICE_S = 0.25  # how long the main thread waits on a read before it looks at its signals again


def gather(pool: ThreadPoolExecutor, fn, xs) -> list:
    """`pool.map`'s results in order, waited for in slices. The kernel may hand Ctrl-C to a
    worker thread; Python then only flags it for the main thread, which a plain wait on a slow
    read (several 10 s answers) does not see until the read ends. Each slice ends in the
    interpreter, where the flag raises KeyboardInterrupt at once."""
    futures = [pool.submit(fn, x) for x in xs]
    for f in futures:
        while not f.done():
            wait([f], timeout=SLICE_S, return_when=FIRST_COMPLETED)
    return [f.result() for f in futures]


@dataclass
class Observation:
    """What one poll saw of one item; `error` set means nothing else is to be trusted."""

    item_id: str
    state: str | None = None
    title: str | None = None
    url: str | None = None
    superseded_by: int | None = None
    superseded_state: str | None = None
    in_release: str | None = None
    updated_at: str | None = None
    moved_to: str | None = None
    details: dict[str, Any] = field(default_factory=dict)
    error: str | None = None

    def fingerprint(self) -> str:
        """Hash of what matters; a changed fingerprint is a change worth recording."""
        significant = {
            "state": self.state,
            "title": self.title,
            "superseded_by": self.superseded_by,
            "superseded_state": self.superseded_state,
            "in_release": self.in_release,
            "shas": [c["sha"] for c in self.details.get("commits", [])],
            "releases": [r["tag"] for r in self.details.get("releases", [])][:1],
            "moved_to": self.moved_to,
        }
        # Added only when set, so the fingerprints of items without them stay what they were.
        # Shas and line numbers move with every unrelated commit: only what they mean counts.
        dead = [(d["path"], d["ref"]) for d in self.details.get("dead_paths", [])]
        if dead:
            significant["dead_paths"] = dead
        if self.details.get("truncated"):
            significant["truncated"] = True
        code = self.details.get("code")
        if code:
            significant["code"] = [code.get("ref"), sorted({ln["text"] for ln in code["lines"]})]
        return hashlib.sha256(json.dumps(significant, sort_keys=True).encode()).hexdigest()[:16]


DISCUSSION_QUERY = """query($owner: String!, $name: String!, $number: Int!) {
  repository(owner: $owner, name: $name) {
    discussion(number: $number) {
      number title url closed closedAt stateReason isAnswered createdAt updatedAt
    }
  }
}"""


def discussion_state(d: dict[str, Any]) -> str:
    """open, answered (open, an answer chosen), resolved (closed as resolved), closed."""
    if not d.get("closed"):
        return "answered" if d.get("isAnswered") else "open"
    return "resolved" if d.get("stateReason") in (None, "RESOLVED") else "closed"


def pull_state(pull: dict[str, Any]) -> str:
    if pull.get("merged") or pull.get("merged_at"):
        return "merged"
    if pull.get("state") == "closed":
        return "closed"
    return "draft" if pull.get("draft") else "open"


def issue_state(issue: dict[str, Any]) -> str:
    if issue.get("state") != "closed":
        return "open"
    reason = issue.get("state_reason")
    return reason if reason in ("completed", "not_planned") else "closed"


class Poller:
    """Polls items concurrently (bounded) through one shared GitHubClient.

    The tips (commit and tree) of the refs the items read their paths at are read once per
    repository and ref per poller, before the items, and shared. An item whose sources did not
    change (watcher.poll.heads for code and commits, watcher.poll.events_feed for issues, pulls and
    releases) is answered from the cache without a request.
    """

    def __init__(
        self,
        client: GitHubClient,
        concurrency: int = 8,
        sweep_every: int = 10,
        interval: float | None = None,
    ):
        self.client = client
        self.concurrency = concurrency
        self.heads = Heads(client)
        self.feed = EventsFeed(client, sweep_every, interval)
        self._watched: dict[tuple[str, str | None], tuple[str, ...]] = {}
        self.tracked: frozenset[tuple[str, int]] = frozenset()  # (repo, number) of issues/pulls
        # PR (repo, number) -> the tracked item whose timeline links it ("owner/repo#N")
        self.linked: dict[tuple[str, int], str] = {}
        self._timelines: dict[tuple[str, int], list[dict[str, Any]]] = {}
        self._tips: dict[tuple[str, str | None], HeadRead | GitHubError] = {}
        self._tips_lock = threading.Lock()
        self.finished = 0  # items read (or failed) so far: what a Ctrl-C mid-poll drops

    def poll_all(self, items: list[Item]) -> dict[str, Observation]:
        self.tracked = relevance.tracked_numbers(items)
        keys = sorted(
            {(i.repo, ref_spec(i)) for i in items if i.kind in ("commits", "code") and i.paths},
            key=str,
        )
        for i in items:
            if i.kind in ("commits", "code") and i.paths:
                key = (i.repo, ref_spec(i))
                self._watched[key] = tuple(sorted({*self._watched.get(key, ()), *i.paths}))
        feeds = sorted({i.repo for i in items if i.kind in FEED_KINDS})
        pool = ThreadPoolExecutor(max_workers=max(1, self.concurrency), thread_name_prefix="poll")
        interrupted = False
        try:
            gather(pool, lambda k: self.tip(*k, raise_error=False), keys)
            gather(pool, self.feed.read, feeds)
            # issues and pulls first when there are streams: their timelines link PRs that
            # rank a stream's commits (else config order, as ever)
            streams = any(i.kind == "commits" for i in items)
            threads = [i for i in items if streams and i.kind in ("issue", "pull")]
            rest = [i for i in items if i not in threads]
            seen = {o.item_id: o for o in gather(pool, self._poll_counted, threads)}
            self.linked = relevance.linked_pulls(threads, self._timelines)
            seen.update((o.item_id, o) for o in gather(pool, self._poll_counted, rest))
            return {i.id: seen[i.id] for i in items if i.id in seen}
        except KeyboardInterrupt:
            interrupted = True
            raise
        finally:
            # Ctrl-C: start nothing more and do not wait for the reads in flight (a slow server
            # would hold the exit for up to `timeout`); their answers are dropped with the cycle.
            pool.shutdown(wait=not interrupted, cancel_futures=interrupted)

    def _poll_counted(self, item: Item) -> Observation:
        obs = self.poll(item)
        with self._tips_lock:
            self.finished += 1
        return obs

    def timeline(self, item: Item) -> list[dict[str, Any]]:
        """An issue's or pull's timeline (conditional), read once per poller."""
        key = (item.repo.lower(), int(item.number or 0))
        with self._tips_lock:
            known = self._timelines.get(key)
        if known is None:
            known = self.client.paginate(
                f"/repos/{item.repo}/issues/{item.number}/timeline", {"per_page": 100}
            )
            with self._tips_lock:
                self._timelines[key] = known
        return known

    def _read_links(self, item: Item) -> None:
        """Read the timeline for what it links (a read error only costs the ranking)."""
        try:
            self.timeline(item)
        except GitHubError:
            pass

    def tip(self, repo: str, spec: str | None, raise_error: bool = True) -> Tip | None:
        """The tip of `spec` in `repo` (read once per poller); a read error is remembered too."""
        key = (repo, spec)
        with self._tips_lock:
            known = self._tips.get(key)
        if known is None:
            try:
                known = self.heads.read(repo, spec, self._watched.get(key, ()))
            except GitHubError as e:
                known = e
            with self._tips_lock:
                self._tips[key] = known
        if isinstance(known, GitHubError):
            if raise_error:
                raise known
            return None
        return known.tip

    def _from_cache(self, item: Item) -> bool:
        """Nothing this item reads can have changed since it was last read without error."""
        if item.kind in FEED_KINDS:
            return not self.feed.must_read(item)
        if not item.paths or self.feed.due(item):
            return False
        with self._tips_lock:
            head = self._tips.get((item.repo, ref_spec(item)))
        return isinstance(head, HeadRead) and head.quiet and item.id in head.trusted

    def poll(self, item: Item) -> Observation:
        """Never raises for GitHub trouble: returns an Observation with `error` instead."""
        if self._from_cache(item):
            with self.client.from_cache():
                obs = self._poll(item)
        else:
            obs = self._poll(item)
        if obs.error is None and item.kind in ("commits", "code") and item.paths:
            self.heads.trust(item.repo, ref_spec(item), {item.id})
        return obs

    def _poll(self, item: Item) -> Observation:
        try:
            reader = {
                "pull": self._pull,
                "issue": self._issue,
                "commits": self._commits,
                "releases": self._releases,
                "code": self._code,
                "commit": self._commit,
                "discussion": self._discussion,
            }[item.kind]
            return reader(item)
        except GitHubError as e:
            where = f" ({e.url})" if e.url else ""
            return Observation(item_id=item.id, error=f"{e}{where}")
        except (KeyError, TypeError, ValueError) as e:
            return Observation(
                item_id=item.id, error=f"unexpected response shape: {type(e).__name__}: {e}"
            )

    def _path_warnings(self, item: Item, tip: Tip) -> dict[str, Any]:
        return path_warnings(self.client, item, tip)

    # -- code check
    def _code(self, item: Item) -> Observation:
        tip = self.tip(item.repo, item.ref)
        details = self._path_warnings(item, tip)
        state, evidence = read_code_item(
            self.client, item, tip.ref, sha=tip.sha, tree=tip.paths, moved=details["moves"]
        )
        details["code"] = evidence
        names = ", ".join(p.rsplit("/", 1)[-1] for p in item.paths)
        return Observation(
            item_id=item.id,
            state=state,
            title=f"{names} at {tip.ref}",
            url=(
                evidence["lines"][0]["url"]
                if evidence["lines"]
                else f"https://github.com/{item.repo}/blob/{tip.sha}/{item.paths[0]}"
            ),
            details=details,
        )

    # -- issue
    def _issue(self, item: Item) -> Observation:
        path = f"/repos/{item.repo}/issues/{item.number}"
        page = self.client.get(path)
        issue = page.data
        state = issue_state(issue)
        if state == "completed" and trust.author_closed(issue) is not False:
            if trust.closed_by_author(issue, self.timeline(item)):
                state = "closed-by-author"  # not fixed: nothing merged is linked to it
        else:
            self._read_links(item)
        return Observation(
            item_id=item.id,
            state=state,
            title=issue["title"],
            url=issue.get("html_url") or item.html_url,
            updated_at=issue.get("closed_at") or issue.get("updated_at"),
            moved_to=page.url if self.client.moved(self.client.url(path), page.url) else None,
            details={"state_reason": issue.get("state_reason"), "is_pull": "pull_request" in issue},
        )

    # -- pull request
    def _pull(self, item: Item) -> Observation:
        path = f"/repos/{item.repo}/pulls/{item.number}"
        page = self.client.get(path)
        pull = page.data
        state = pull_state(pull)
        obs = Observation(
            item_id=item.id,
            state=state,
            title=pull["title"],
            url=pull.get("html_url") or item.html_url,
            updated_at=pull.get("merged_at") or pull.get("closed_at") or pull.get("updated_at"),
            moved_to=page.url if self.client.moved(self.client.url(path), page.url) else None,
            details={"merged_at": pull.get("merged_at"), "closed_at": pull.get("closed_at")},
        )
        merge_sha, fix_repo = None, item.repo
        if state != "closed":
            self._read_links(item)
        if state == "merged":
            merge_sha = pull.get("merge_commit_sha")
        elif state == "closed":
            sup, context = trust.superseding(self.client, item, self.timeline(item), pull_state)
            if context:  # shown, never counted: unmerged, or not from a trusted repository
                obs.details["referenced_by"] = context
            if sup:
                fix_repo, number, sup_pull = sup
                obs.superseded_by = number
                obs.superseded_state = pull_state(sup_pull)
                obs.details["superseded_repo"] = fix_repo
                obs.details["superseded_ref"] = f"{fix_repo}#{number}"
                obs.details["superseded_title"] = sup_pull.get("title")
                obs.details["superseded_url"] = sup_pull.get("html_url")
                obs.details["superseded_merged_at"] = sup_pull.get("merged_at")
                merge_sha = sup_pull.get("merge_commit_sha")
        if merge_sha:
            obs.details["merge_commit_sha"] = merge_sha
            obs.in_release = self.first_release_containing(fix_repo, merge_sha)
        return obs

    # -- a discussion (GraphQL only: GitHub's REST API has none)
    def _discussion(self, item: Item) -> Observation:
        owner, name = item.owner_name
        data = self.client.graphql(
            DISCUSSION_QUERY, {"owner": owner, "name": name, "number": item.number}
        )
        d = data["repository"]["discussion"]
        return Observation(
            item_id=item.id,
            state=discussion_state(d),
            title=storable(str(d["title"])),
            url=d.get("url") or item.html_url,
            updated_at=d.get("closedAt") or d.get("updatedAt"),
            details={"state_reason": d.get("stateReason"), "answered": bool(d.get("isAnswered"))},
        )

    # -- one commit (a tracker row's commit link): where it is, and the first release holding it
    def _commit(self, item: Item) -> Observation:
        page = self.client.get(f"/repos/{item.repo}/commits/{item.sha}")
        commit = page.data
        sha = commit["sha"]
        return Observation(
            item_id=item.id,
            state="committed",
            title=storable(commit_message(commit).split("\n", 1)[0]),
            url=commit.get("html_url") or item.html_url,
            updated_at=((commit.get("commit") or {}).get("committer") or {}).get("date"),
            in_release=self.first_release_containing(item.repo, sha),
            details={"sha": sha},
        )

    def first_release_containing(self, repo: str, sha: str) -> str | None:
        """The oldest published release whose tag contains `sha`, by the compare API.

        Releases are ordered oldest to newest; containment is monotone along a release line, so
        a binary search asks log2(n) compares. `behind` or `identical` means contained. Once
        found, the answer never changes: it is remembered and not asked again.
        """
        memo = f"contains {repo} {sha}"
        known = self.client.memo_get(memo)
        if known:
            return known
        found = self._first_release_containing(repo, sha)
        if found:
            self.client.memo_put(memo, found)
        return found

    def _first_release_containing(self, repo: str, sha: str) -> str | None:
        releases = [
            r
            for r in self.client.paginate(f"/repos/{repo}/releases", {"per_page": 100})
            if not r.get("draft") and not r.get("prerelease")
        ]
        releases.sort(key=lambda r: (r.get("published_at") or r.get("created_at") or "", r["id"]))
        tags = [r["tag_name"] for r in releases]
        if not tags or not self._contains(repo, tags[-1], sha):
            return None
        lo, hi = 0, len(tags) - 1  # tags[hi] contains
        while lo < hi:
            mid = (lo + hi) // 2
            if self._contains(repo, tags[mid], sha):
                hi = mid
            else:
                lo = mid + 1
        return tags[lo]

    def _contains(self, repo: str, tag: str, sha: str) -> bool:
        try:
            data = self.client.get_json(f"/repos/{repo}/compare/{tag}...{sha}", {"per_page": 1})
        except GitHubError as e:
            if e.status == 404:  # the sha is not reachable from this tag's history at all
                return False
            raise
        return data.get("status") in ("behind", "identical")

    # -- commit stream
    def _commits(self, item: Item) -> Observation:
        details: dict[str, Any] = {"dead_paths": [], "moves": [], "warnings": []}
        if item.paths:
            try:
                details = self._path_warnings(item, self.tip(item.repo, item.branch))
            except GitHubError as e:  # the stream itself can be read: say only what is unknown
                where = item.branch or "the default branch"
                details["warnings"].append(
                    f"could not check that the watched paths still exist at {where}: {e}"
                )
        followed = [m["new"] for m in details["moves"] if m.get("new")]
        read_as = replace(item, paths=(*item.paths, *followed)) if followed else item
        paths_of: dict[str, list[str]] = {}
        commits, truncated = read_commit_stream(self.client, read_as, paths_of=paths_of)
        matched = [c for c in commits if commit_matches(item, c)]
        ranked = relevance.rank(item, matched, paths_of, self.tracked, self.linked)
        matches = [commit_evidence(item.repo, c) for c in ranked]
        for ev, c in zip(matches, ranked, strict=True):
            why = relevance.reasons(item, c, paths_of, self.tracked, self.linked)
            if why:
                ev["relevance"] = why
        details["warnings"] += [truncation_warning(item, t) for t in truncated]
        details.update(
            commits=matches[:MAX_COMMITS_SHOWN],
            # the newest match, whatever ranks first: what "newest on <date>" and events name
            newest=commit_evidence(item.repo, matched[0]) if matched else None,
            matched=len(matches),
            scanned=len(commits),
            truncated=truncated,
        )
        return Observation(
            item_id=item.id,
            state="matched" if matches else "no-match",
            title=(matches[0]["subject"] if matches else f"no matching commits in {item.repo}"),
            url=matches[0]["url"] if matches else item.html_url,
            updated_at=details["newest"]["date"] if matches else None,
            details=details,
        )

    # -- release stream
    def _releases(self, item: Item) -> Observation:
        data = self.client.get_json(f"/repos/{item.repo}/releases", {"per_page": 30})
        releases = [
            {
                "tag": r["tag_name"],
                "name": r.get("name"),
                "published_at": r.get("published_at"),
                "url": r.get("html_url"),
                "prerelease": bool(r.get("prerelease")),
            }
            for r in data
            if not r.get("draft")
        ]
        if item.since:
            releases = [r for r in releases if (r["published_at"] or "") >= item.since]
        releases.sort(key=lambda r: r["published_at"] or "", reverse=True)
        latest = releases[0] if releases else None
        return Observation(
            item_id=item.id,
            state=latest["tag"] if latest else "none",
            title=(latest["name"] or latest["tag"]) if latest else f"no releases of {item.repo}",
            url=latest["url"] if latest else item.html_url,
            updated_at=latest["published_at"] if latest else None,
            details={"releases": releases[:10]},
        )


# ---------------------------------------------------------------- matching (plain functions)


def commit_message(commit: dict[str, Any] | str) -> str:
    """The full message of a commit as the commits API returns it (or a message given as text)."""
    if isinstance(commit, str):
        return commit
    return ((commit.get("commit") or {}).get("message")) or ""


def commit_matches(item: Item, commit: dict[str, Any] | str) -> bool:
    """Does this commit satisfy the item's rule? `pattern` and every one of `terms` must match
    the subject line (match = "subject", the default) or the whole message (match = "message"),
    and no `exclude` term may be in the subject."""
    message = commit_message(commit)
    subject = (message.splitlines() or [""])[0]
    text = message if item.match == "message" else subject
    if item.pattern and not textmatch.search(item.pattern, text):
        return False
    if not all(textmatch.search(term, text) for term in item.terms):
        return False
    return not excluded(item, subject)


def excluded(item: Item, subject: str) -> str | None:
    """The first `exclude` term found in the subject as a whole word (any case), or None
    (within the subject's first textmatch.MAX_LINE_CHARS characters, so the work is bounded)."""
    return relevance.word_found(item.exclude, subject)


def commit_evidence(repo: str, commit: dict[str, Any]) -> dict[str, Any]:
    """{sha, date, subject, url} of one commit from the commits API."""
    c = commit.get("commit") or {}
    message = c.get("message") or ""
    return {
        "sha": commit["sha"],
        "date": (c.get("committer") or {}).get("date") or (c.get("author") or {}).get("date"),
        "subject": message.splitlines()[0] if message else "",
        "url": commit.get("html_url") or f"https://github.com/{repo}/commit/{commit['sha']}",
    }


# ---------------------------------------------------------------- refs, trees, files


def live_paths(item: Item) -> tuple[str, ...]:
    """The watched paths expected to exist (those in `retired_paths` are gone on purpose)."""
    return tuple(p for p in item.paths if p not in item.retired_paths)


def path_warnings(client: GitHubClient, item: Item, tip: Tip) -> dict[str, Any]:
    """details["dead_paths"], details["moves"] and their sentences for an item's watched
    paths at a tip: a dead path is looked up (renamed or removed) before it is warned about."""
    dead = dead_paths(client, tip, live_paths(item))
    found, warnings = [], []
    for d in dead:
        move = moves.follow(client, item.repo, d["path"], tip.ref, tip.paths)
        if move is None:
            warnings.append(dead_path_warning(item.kind, d))
            continue
        found.append(move.as_dict())
        if move.new:
            warnings.append(moves.move_warning(item.kind, move))
        else:
            warnings.append(dead_path_warning(item.kind, d) + moves.removed_note(move))
    return {"dead_paths": dead, "moves": found, "warnings": warnings}


def dead_path_warning(kind: str, dead: dict[str, Any]) -> str:
    """The sentence the page, the site, status.json, explain and validate show."""
    where = f"`{dead['path']}` no longer exists at {dead['ref']} ({dead['sha'][:7]})"
    if kind == "code":
        return f"{where}; this check cannot read it there"
    return f"{where}; this rule cannot see new commits there"


def _read_file(client: GitHubClient, repo: str, path: str, ref: str) -> str | None:
    """A file's text at a ref through the contents API (conditional); None when it is not there."""
    try:
        data = client.get_json(f"/repos/{repo}/contents/{quote(path)}", {"ref": ref})
    except GitHubError as e:
        if e.status == 404:
            return None
        raise
    if isinstance(data, list) or data.get("type") not in (None, "file"):
        raise GitHubError(f"{repo}: {path} at {ref} is a folder, not a file")
    if data.get("encoding") == "none" and data.get("sha"):
        data = _read_blob(client, repo, path, ref, data)
    if data.get("encoding") != "base64":
        raise GitHubError(
            f"{repo}: {path} at {ref} is too large for the contents API"
            f" (encoding {data.get('encoding')!r})"
        )
    try:
        raw = base64.b64decode(data.get("content") or "")
    except (binascii.Error, ValueError) as e:
        raise GitHubError(f"{repo}: {path} at {ref}: bad base64 content: {e}") from None
    return raw.decode("utf-8", errors="replace")


def _read_blob(
    client: GitHubClient, repo: str, path: str, ref: str, entry: dict[str, Any]
) -> dict[str, Any]:
    """A file over the contents API's 1 MB limit, through the git blobs API (up to
    MAX_CODE_FILE_BYTES: the base64 answer must fit the transport's body cap)."""
    size = entry.get("size") or 0
    if size > MAX_CODE_FILE_BYTES:
        raise GitHubError(
            f"{repo}: {path} at {ref} is {size / 2**20:.1f} MiB; a code item reads files up to "
            f"{MAX_CODE_FILE_BYTES / 2**20:g} MiB"
        )
    return client.get_json(f"/repos/{repo}/git/blobs/{quote(entry['sha'], safe='')}")


def _find(repo: str, sha: str, path: str, text: str, pattern: str, rule: str) -> list[dict]:
    """Every line where `pattern` matches, one line at a time with the work bounded
    (watcher.poll.textmatch: a backtracking pattern over a long upstream line cannot stall the cycle)."""
    lines = text.split("\n")
    return [
        {
            "path": path,
            "line": n,
            "text": storable(lines[n - 1].strip())[:300],  # file text: no terminal escapes
            "url": f"https://github.com/{repo}/blob/{sha}/{path}#L{n}",
            "rule": rule,
            "pattern": pattern,
        }
        for n in textmatch.matching_lines(pattern, text)
    ]


def read_code_item(
    client: GitHubClient,
    item: Item,
    ref: str | None = None,
    *,
    sha: str | None = None,
    tree: frozenset[str] | None = None,
    moved: list[dict[str, Any]] | None = None,
) -> tuple[str, dict[str, Any]]:
    """Read a code item's files at `ref` (default: the item's configured ref, resolved) and judge
    them: `present` when every `present` regex is found and no `absent` one is, `absent` when
    not, `unreadable` when no file could be read (missing without a rename, a folder, too
    large): neither fixed nor not fixed. A file that moved (`moved`: moves.Move dicts;
    looked up here when not given) is read at its new path. Evidence: the ref and commit read
    and the matching lines with permalinks. `tree` (the tip's paths) skips reads of files
    known missing.
    """
    ref = ref or resolve_ref(client, item.repo, item.ref)
    sha = sha or head_sha(client, item.repo, ref)
    look_up = moved is None  # the poller looked them up with the dead-path check already
    new_path = {m["path"]: m["new"] for m in moved or () if m.get("new")}
    lines: list[dict[str, Any]] = []
    missing, read, unreadable = [], [], []
    found: dict[str, bool] = {p: False for p in (*item.present, *item.absent)}

    def text_at(path: str) -> str | None:
        if tree is not None and path not in tree:
            return None
        return _read_file(client, item.repo, path, ref)

    for watched in item.paths:
        path = new_path.get(watched, watched)
        try:
            text = text_at(path)
            if text is None and look_up:
                move = moves.follow(client, item.repo, watched, ref, tree)
                if move is not None and move.new and not move.new.endswith("/"):
                    new_path[watched] = path = move.new
                    text = text_at(path)
        except GitHubError as e:
            if e.status is not None:  # an HTTP error: the item goes stale, keeping its state
                raise
            unreadable.append({"path": path, "reason": str(e)})
            continue
        if text is None:
            missing.append(watched)
            continue
        read.append(path)
        for rule, patterns in (("present", item.present), ("absent", item.absent)):
            for pattern in patterns:
                hits = _find(item.repo, sha, path, text, pattern, rule)
                found[pattern] = found[pattern] or bool(hits)
                lines.extend(hits)
    ok = all(found[p] for p in item.present) and not any(found[p] for p in item.absent)
    state = ("present" if ok else "absent") if read else "unreadable"
    evidence = {
        "ref": ref,
        "sha": sha,
        "lines": lines[:MAX_LINES_SHOWN],
        "line_count": len(lines),
        "files_read": read,
        "files_missing": missing,
        "not_found": [p for p in item.present if not found[p]],
        "still_found": [p for p in item.absent if found[p]],
    }
    if unreadable:
        evidence["files_unreadable"] = unreadable
    if new_path:
        evidence["moved"] = new_path
    if state == "unreadable":
        why = [f"`{u['path']}`: {u['reason']}" for u in unreadable]
        why += [f"`{p}` is not at {ref}" for p in missing]
        evidence["unreadable"] = "; ".join(why) or "nothing to read"
    return state, evidence


def read_commit_stream(
    client: GitHubClient,
    item: Item,
    *,
    until: str | None = None,
    ref: str | None = None,
    paths_of: dict[str, list[str]] | None = None,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Every commit in the item's paths back to `since` (following Link rel="next"), unless
    `max_pages` stops a path early. Returns (commits newest first, one entry per truncated path:
    {path, pages, commits, oldest}). `paths_of`, when given, gets sha -> the watched paths
    whose list named the commit (what the headline's relevance reads)."""
    params: dict[str, Any] = {"per_page": 100}
    if item.since:
        params["since"] = item.since
    if until:
        params["until"] = until
    if ref or item.branch:
        params["sha"] = ref or item.branch
    seen: dict[str, dict[str, Any]] = {}
    truncated = []
    cap = item.max_pages if item.max_pages is not None else MAX_STREAM_PAGES
    for path in item.paths or (None,):
        batch, pages, more = [], 0, False
        with client.one_read():  # cached only when the whole path was read
            for page in client.pages(
                f"/repos/{item.repo}/commits", dict(params, path=path) if path else params, cap
            ):
                batch.extend(page.data)
                pages += 1
                more = "next" in page.links
        if more:
            oldest = commit_evidence(item.repo, batch[-1])["date"] if batch else None
            truncated.append(
                {"path": path, "pages": pages, "commits": len(batch), "oldest": oldest}
            )
        for c in batch:
            seen.setdefault(c["sha"], c)
            if paths_of is not None and path:
                paths_of.setdefault(c["sha"], []).append(path)
    commits = sorted(
        seen.values(),
        key=lambda c: (commit_evidence(item.repo, c)["date"] or "", c["sha"]),
        reverse=True,
    )
    return commits, truncated


def truncation_warning(item: Item, t: dict[str, Any]) -> str:
    where = f" in `{t['path']}`" if t["path"] else ""
    since = f" since {item.since[:10]}" if item.since else ""
    back = f", back to {t['oldest'][:10]}" if t.get("oldest") else ""
    return (
        f"Read only the newest {t['commits']} commits{where} (max_pages = "
        f"{item.max_pages or MAX_STREAM_PAGES}){back}; older commits{since} were not read"
    )


def ref_spec(item: Item) -> str | None:
    """The configured ref an item reads its paths at (None: the default branch)."""
    return item.ref if item.kind == "code" else item.branch


def check_paths(client: GitHubClient, items: list[Item]) -> tuple[list[tuple[str, str]], int]:
    """`watcher validate --online`: every item, read once the way a first cycle would.

    An issue or pull request must exist (a typo'd number is a 404); a repository must exist and
    its ref (branch, tag, latest release) resolve; every watched path must exist at that tip,
    except the ones an item declares gone (`retired_paths`); a moved path comes with the `paths`
    edit that follows it. Returns ([(item id, sentence)], items checked)."""
    poller = Poller(client)
    problems: list[tuple[str, str]] = []
    checked = 0
    for item in items:
        checked += 1
        try:
            if item.kind in ("issue", "pull"):
                kind = "pulls" if item.kind == "pull" else "issues"
                client.get_json(f"/repos/{item.repo}/{kind}/{item.number}")
                continue
            if item.kind == "releases":
                client.get_json(f"/repos/{item.repo}")
                continue
            tip = poller.tip(item.repo, ref_spec(item))
            found = path_warnings(client, item, tip)
        except GitHubError as e:
            problems.append((item.id, online_problem(item, e)))
            continue
        problems += [(item.id, w) for w in found["warnings"]]
        edit = moves.suggested_paths(
            item.paths, [moves.Move(**{**m, "maybe": tuple(m["maybe"])}) for m in found["moves"]]
        )
        if edit:
            problems.append((item.id, "suggested edit: paths = " + json.dumps(edit)))
    return problems, checked


def online_problem(item: Item, e: GitHubError) -> str:
    """Why an item cannot be read, naming the key to fix when GitHub says it does not exist."""
    if e.status != 404:
        return f"could not read {item.repo}: {e}"
    return not_found_problem(item)


def not_found_problem(item: Item) -> str:
    """A 404 for an item, as a configuration error: which keys of its [[item]] to check."""
    if item.kind in ("issue", "pull"):
        word = "pull request" if item.kind == "pull" else "issue"
        return (
            f"{item.repo} has no {word} #{item.number} (GitHub answered 404): check `repo` and"
            " `number`"
        )
    where = ref_spec(item)
    if where:
        key = "ref" if item.kind == "code" else "branch"
        return f"{item.repo} at {where} not found (GitHub answered 404): check `repo` and `{key}`"
    return f"{item.repo} not found (GitHub answered 404): check `repo`"
