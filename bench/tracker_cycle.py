"""Many items, same cost: a tracker of 160 rows over 15 repositories, adopted as the watch list,
then a cold cycle and quiet cycles against the fake GitHub (every repository churning between
cycles the way real GitHub does: a star and a push nobody watches).

Prints, per cycle: requests, answers of 200 (the rate-limit spend when authorised), 304s, the
cycle's seconds, and the generated tracker's row and disagreement counts.

    python bench/tracker_cycle.py [--rows 160] [--repos 15] [--cycles 4]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from watcher.config.load import load_config  # noqa: E402
from watcher.fakes.github import FakeGitHub  # noqa: E402
from watcher.loop.cycle import run_cycle  # noqa: E402
from watcher.onboard.adopt_tracker import adopt_tracker  # noqa: E402

STATUSES = (
    "🟡 Open",
    "🔵 Merged, not in our pin",
    "🔴 Open, no PR yet",
    "✅ Resolved",
    "❌ Closed",
)


def build(gh: FakeGitHub, rows: int, repos: int) -> str:
    """A tracker of `rows` rows, a table per repository; every fourth row links two threads, every
    tenth a commit too, every twentieth a discussion."""
    lines = ["# Upstream tracker", ""]
    per = -(-rows // repos)
    n = 0
    for r in range(repos):
        repo = f"org{r}/engine{r}"
        lines += [f"## engine{r} (`{repo}`)", "", "| Issue / PR | Status | Why | Workaround |"]
        lines.append("|---|---|---|---|")
        for i in range(per):
            if n == rows:
                break
            number = 1000 + i * 2
            kind = ("pull", "issue")[i % 2]
            path = "pull" if kind == "pull" else "issues"
            link = f"[#{number}](https://github.com/{repo}/{path}/{number})"
            if i % 10 == 5:  # a commit that landed the fix, linked in the same row
                sha = gh.add_commit(repo, message=f"fix {number}", date="2026-07-01T00:00:00Z")[
                    "sha"
                ]
                link += f" in [`{sha[:7]}`](https://github.com/{repo}/commit/{sha})"
            if i % 20 == 10:  # a discussion asked upstream about the same thing
                gh.add_discussion(repo, 9000 + i, title=f"d{i}", answered=i % 40 == 10)
                link += f" ([discussion](https://github.com/{repo}/discussions/{9000 + i}))"
            if i % 4 == 3:  # a second thread in the same row
                link += f" and [#{number + 1}](https://github.com/{repo}/issues/{number + 1})"
                gh.add_issue(repo, number + 1, title=f"t{number + 1}")
            if kind == "pull":
                merged = i % 3 == 0
                gh.add_pull(
                    repo,
                    number,
                    title=f"t{number}",
                    merged=merged,
                    merged_at="2026-07-02T10:00:00Z" if merged else None,
                    merge_commit_sha=f"{r:02d}{number:06d}".ljust(40, "a") if merged else None,
                )
            else:
                gh.add_issue(repo, number, title=f"t{number}", state=("open", "closed")[i % 3 == 1])
            lines.append(f"| {link} — row {n} | {STATUSES[n % 5]} | why {n} | none |")
            n += 1
        lines.append("")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=160)
    parser.add_argument("--repos", type=int, default=15)
    parser.add_argument("--cycles", type=int, default=4)
    parser.add_argument("--paths", action="store_true", help="requests by endpoint, per cycle")
    args = parser.parse_args()
    os.environ["GITHUB_TOKEN"] = "test-token"
    os.environ.pop("GITHUB_API_URL", None)
    tmp = Path(tempfile.mkdtemp(prefix="watcher-tracker-"))
    try:
        with FakeGitHub() as gh:
            (tmp / "docs").mkdir()
            (tmp / "docs" / "UPSTREAM.md").write_text(build(gh, args.rows, args.repos))
            (tmp / "watch.toml").write_text(f'[watcher]\ngithub_api_url = "{gh.url}"\n')
            done = adopt_tracker(load_config(tmp / "watch.toml"), tmp / "docs" / "UPSTREAM.md")
            cfg = load_config(tmp / "watch.toml")
            repos = sorted({i.repo for i in cfg.items})
            print(f"{done.rows} rows, {len(cfg.items)} items over {len(repos)} repositories")
            print("| cycle | requests | 200 | 304 | seconds | rows | disagree |")
            print("|---|---:|---:|---:|---:|---:|---:|")
            for n in range(args.cycles):
                gh.reset_requests()
                started = time.monotonic()
                report = run_cycle(cfg)
                took = time.monotonic() - started
                statuses = [r.status for r in gh.requests]
                t = report.tracker or {}
                name = "cold" if n == 0 else "quiet"
                print(
                    f"| {n + 1} ({name}) | {len(statuses)} | {statuses.count(200)} |"
                    f" {statuses.count(304)} | {took:.2f} | {t.get('rows')} | {t.get('disagree')} |"
                )
                if args.paths:
                    kinds: dict[str, list[int]] = {}
                    for r in gh.requests:
                        key = re.sub(r"^/repos/[^/]+/[^/]+", "", r.path)
                        key = re.sub(r"/[0-9a-f]{40}", "/SHA", re.sub(r"/\d+(?=/|$)", "/N", key))
                        kinds.setdefault(key or "/", [0, 0])[r.status == 304] += 1
                    for key, (full, nm) in sorted(kinds.items()):
                        print(f"  {key}: {full} answered, {nm} not modified")
                if report.item_errors:
                    print(f"  errors: {list(report.item_errors.items())[:3]}")
                for repo in repos:
                    gh.churn(repo)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
