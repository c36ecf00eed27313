"""`watcher backtest`: replay rules over history before trusting them.

For each commit or code item and each `--as-of` date it asks GitHub what the rule would have seen
then: a commit stream from `--since` up to the date (`until`), a code item at the branch tip of
that date (or the newest release published by then). Matching and reading are `poll`'s own
functions, so the backtest judges exactly like a cycle; `--show-unmatched` adds the commits in
the watched paths that the rule ignored (recall, not just precision). Requests are conditional
through the store's ETag cache and counted. What GitHub cannot answer for a date (in tests: what
the recorded history does not hold) is reported as `unknown` with the reason, never guessed,
and not asked twice: such an answer is not retried. Requests share the process's per-minute
budget (watcher.github.pacing) with everything else.
"""

from __future__ import annotations

import dataclasses
import time
from datetime import UTC, datetime
from typing import Any

from watcher.config.model import LATEST_RELEASE, Config, Item
from watcher.core.errors import ConfigError, GitHubError
from watcher.core.progress import Progress
from watcher.github.client import GitHubClient
from watcher.poll import heads
from watcher.poll import poller as poll
from watcher.store.db import Store

KINDS = ("commits", "code")
LINES_SHOWN = 3  # matching lines per code item and date in the text view (--json has all)
# Answers kept in memory during one run: every read is pinned to a date or a commit, so a second
# ask (another item at the same tip, the same file at another date) cannot differ. Bounded.
ANSWER_CACHE = 2048


def parse_date(text: str, end_of_day: bool = True) -> datetime:
    """`2026-03-01` (the end of that day, or its start for `--since`) or a full ISO time ->
    aware UTC datetime."""
    value = text.strip().replace("Z", "+00:00")
    if len(value) == 10:
        value += "T23:59:59+00:00" if end_of_day else "T00:00:00+00:00"
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise ConfigError(
            f"not a date: {text!r} (use 2026-03-01 or 2026-03-01T12:00:00Z)"
        ) from None
    return moment.astimezone(UTC) if moment.tzinfo else moment.replace(tzinfo=UTC)


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def select_items(cfg: Config, ids: tuple[str, ...]) -> tuple[list[Item], list[str]]:
    """The items to replay (commit and code items) and a note for each one that cannot be."""
    known = {i.id: i for i in cfg.items}
    unknown = [i for i in ids if i not in known]
    if unknown:
        raise ConfigError(f"no item {', '.join(unknown)} in the config")
    chosen = [known[i] for i in ids] if ids else list(cfg.items)
    skipped = [
        f"{i.id}: a {i.kind} item has no history to replay (GitHub shows its state today only)"
        for i in chosen
        if i.kind not in KINDS
    ]
    return [i for i in chosen if i.kind in KINDS], skipped


class Backtest:
    """One replay of some items over some dates, through one conditional client."""

    def __init__(self, client: GitHubClient, since: datetime, show_unmatched: bool = False):
        self.client = client
        self.since = since
        self.show_unmatched = show_unmatched
        self._tips: dict[tuple[str, str, str], str] = {}
        self._branches: dict[str, str] = {}
        self._releases: dict[str, list[dict[str, Any]]] = {}

    def run(
        self, items: list[Item], dates: list[datetime], progress: Progress | None = None
    ) -> list[dict[str, Any]]:
        out = []
        total, done = len(items) * len(dates), 0
        for item in items:
            row = {"id": item.id, "kind": item.kind, "repo": item.repo, "label": item.label}
            row["dates"] = []
            for d in dates:
                if progress is not None:
                    progress.update(f"{done} of {total} replays ({item.id} as of {_iso(d)[:10]})")
                row["dates"].append(self.one(item, d))
                done += 1
            out.append(row)
        if progress is not None:
            progress.done()
        return out

    def one(self, item: Item, as_of: datetime) -> dict[str, Any]:
        out: dict[str, Any] = {"as_of": _iso(as_of)}
        try:
            if item.kind == "commits":
                out.update(self._commits(item, as_of))
            else:
                out.update(self._code(item, as_of))
        except GitHubError as e:
            out.update(state="unknown", error=f"{e}" + (f" ({e.url})" if e.url else ""))
        return out

    # -- commit streams: the same read and the same matching as a cycle, up to the date
    def _commits(self, item: Item, as_of: datetime) -> dict[str, Any]:
        replayed = dataclasses.replace(item, since=_iso(self.since), max_pages=None)
        commits, _ = poll.read_commit_stream(self.client, replayed, until=_iso(as_of))
        matched, ignored = [], []
        for c in commits:
            (matched if poll.commit_matches(item, c) else ignored).append(
                poll.commit_evidence(item.repo, c)
            )
        out: dict[str, Any] = {
            "state": "matched" if matched else "no-match",
            "matches": matched,
            "match_count": len(matched),
            "scanned": len(commits),
        }
        if self.show_unmatched:
            out["unmatched"] = ignored
        return out

    # -- code items: read at the tip of that date, or at the newest release published by then
    def _code(self, item: Item, as_of: datetime) -> dict[str, Any]:
        if item.ref == LATEST_RELEASE:
            tag = self._release_as_of(item.repo, as_of)
            if tag is None:
                return {"state": "unknown", "error": f"{item.repo} had no release by then"}
            ref, sha = tag, None
        else:
            branch = item.ref or self._default_branch(item.repo)
            ref = sha = self._tip(item.repo, branch, as_of)
        state, evidence = poll.read_code_item(self.client, item, ref, sha=sha)
        return {"state": state, **evidence}

    def _default_branch(self, repo: str) -> str:
        if repo not in self._branches:
            self._branches[repo] = heads.default_branch(self.client, repo)
        return self._branches[repo]

    def _tip(self, repo: str, branch: str, as_of: datetime) -> str:
        """The branch's newest commit by the date (the commits list with `until`)."""
        key = (repo, branch, _iso(as_of))
        if key not in self._tips:
            listed = self.client.get_json(
                f"/repos/{repo}/commits", {"sha": branch, "until": _iso(as_of), "per_page": 1}
            )
            if not listed:
                raise GitHubError(f"{repo} has no commits on {branch} by {_iso(as_of)}")
            self._tips[key] = listed[0]["sha"]
        return self._tips[key]

    def _release_as_of(self, repo: str, as_of: datetime) -> str | None:
        """The newest full release published by the date (the list is read once per repo)."""
        if repo not in self._releases:
            self._releases[repo] = self.client.paginate(
                f"/repos/{repo}/releases", {"per_page": 100}
            )
        releases = self._releases[repo]
        published = [
            r
            for r in releases
            if not r.get("draft")
            and not r.get("prerelease")
            and r.get("published_at")
            and parse_date(r["published_at"]) <= as_of
        ]
        published.sort(key=lambda r: r["published_at"], reverse=True)
        return published[0]["tag_name"] if published else None


def run_backtest(
    cfg: Config,
    ids: tuple[str, ...],
    since: str,
    as_of: tuple[str, ...] = (),
    show_unmatched: bool = False,
    client: GitHubClient | None = None,
) -> dict[str, Any]:
    """The whole command: items, dates, the replay, and what it cost (requests, 304s, seconds)."""
    items, skipped = select_items(cfg, ids)
    start = parse_date(since, end_of_day=False)
    dates = sorted(parse_date(d) for d in as_of) or [datetime.now(UTC)]
    if any(d < start for d in dates):
        raise ConfigError("every --as-of date must be on or after --since")
    store = Store(cfg.db_path)
    own = client is None
    if client is None:
        client = GitHubClient(
            cfg.settings.github_api_url,
            timeout=cfg.settings.timeout,
            max_rate_limit_wait=cfg.settings.max_rate_limit_wait,
            user_agent=cfg.settings.user_agent,
            answer_cache=ANSWER_CACHE,
        )
    client.etags.update(store.etags())
    began = time.monotonic()
    try:
        results = Backtest(client, start, show_unmatched).run(items, dates, Progress("backtest"))
    finally:
        store.put_etags(client.etag_updates)
        store.close()
        if own:
            client.close()
    return {
        "since": _iso(start),
        "as_of": [_iso(d) for d in dates],
        "items": results,
        "skipped": skipped,
        "requests": client.stats.requests,
        "not_modified": client.stats.not_modified,
        "seconds": round(time.monotonic() - began, 2),
    }


def format_report(doc: dict[str, Any], show_unmatched: bool = False) -> str:
    """The human view: per item and date, the state and the evidence; then what it cost."""
    lines = [f"backtest since {doc['since'][:10]}, as of {', '.join(d[:10] for d in doc['as_of'])}"]
    for item in doc["items"]:
        lines.append("")
        lines.append(f"{item['id']} ({item['kind']}, {item['repo']}): {item['label']}")
        for d in item["dates"]:
            head = f"  as of {d['as_of'][:10]}: {d['state']}"
            if d.get("error"):
                lines.append(f"{head} - {d['error']}")
                continue
            if item["kind"] == "commits":
                lines.append(f"{head} ({d['match_count']} of {d['scanned']} commits in its paths)")
                for m in d["matches"]:
                    lines.append(f"    + {m['sha'][:10]} {m['date'][:10]} {m['subject']}")
                if show_unmatched:
                    for m in d.get("unmatched", []):
                        lines.append(f"    - {m['sha'][:10]} {m['date'][:10]} {m['subject']}")
            else:
                at = d["sha"][:10] if d["ref"] == d["sha"] else f"{d['ref']} ({d['sha'][:10]})"
                lines.append(f"{head} at {at}")
                for line in d["lines"][:LINES_SHOWN]:
                    lines.append(
                        f"    {line['path']}:{line['line']} [{line['rule']}] {line['text']}"
                    )
                if d["line_count"] > LINES_SHOWN:
                    lines.append(f"    ... {d['line_count'] - LINES_SHOWN} more matching lines")
                for path in d.get("files_missing", []):
                    lines.append(f"    {path}: not there")
    for note in doc["skipped"]:
        lines.append(f"skipped {note}")
    lines.append("")
    lines.append(
        f"{doc['requests']} requests ({doc['not_modified']} answered 304 from the cache) "
        f"in {doc['seconds']} s"
    )
    return "\n".join(lines)
