"""Requests per cycle, and what a "quiet" cycle spends, against the moving-repository fake.

For 10, 100 and 1,000 items over 1 and 20 repositories, the fake GitHub (in this process) moves
between cycles the way real GitHub does (`churn`: a star and a push to a file nobody watches, in
every repository), and either nothing watched changes ("quiet") or 1% of the items change too
("1%": issues and pulls edited, which the events feed names). Each code tree under test runs its
own cycles in a worker process (`--today DIR`: a checkout of watcher before issue 23; the default
tree is this one), so both are measured side by side against the same fake in one run.

Item mix per repository: 40% pulls (half merged, in a release), 40% issues, 10% commit streams
and 10% code checks on watched paths. Reported per cycle (steady state: after three warm-up
cycles): requests, answers of 200 (what costs rate limit when authorised) and 304s.

    python bench/cost_per_cycle.py --today /tmp/watcher-before [--sizes 10,100,1000] [--repos 1,20]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from watcher.fakes.github import FakeGitHub  # noqa: E402

WORKER = r"""
import json, sys
from pathlib import Path
from watcher.config.load import parse_config
from watcher.loop.cycle import run_cycle
from watcher.github.client import GitHubClient
try:
    from watcher.github.pacing import Budget
    extra = {"budget": Budget(points_per_minute=10**9, content_per_minute=10**9)}
except ImportError:
    extra = {}
path = Path(sys.argv[1])
cfg = parse_config(path.read_text(), path)
for line in sys.stdin:
    client = GitHubClient(cfg.settings.github_api_url, token="test-token", **extra)
    report = run_cycle(cfg, client=client, no_smoke=True)
    client.close()
    print(json.dumps({"errors": len(report.item_errors)}), flush=True)
"""


def seed(gh: FakeGitHub, n_items: int, n_repos: int) -> str:
    """Seed the fake; return the [[item]] tables."""
    items = []
    per_repo = [n_items // n_repos + (1 if r < n_items % n_repos else 0) for r in range(n_repos)]
    for r, count in enumerate(per_repo):
        repo = f"org/repo{r}"
        gh.add_commit(
            repo,
            message="initial",
            date="2026-01-01T00:00:00Z",
            contents={f"src/mod{k}/core.py": f"VALUE = {k}\n" for k in range(10)},
        )
        gh.add_release(repo, "v1.0", published_at="2026-01-02T00:00:00Z")
        for k in range(count):
            n = k + 1
            kind = ("pull", "pull", "issue", "issue", "pull", "pull", "issue", "issue")
            kind = (*kind, "commits", "code")[k % 10]
            iid = f"r{r}-{n}"
            if kind == "pull":
                merged = k % 2 == 0
                gh.add_pull(
                    repo,
                    n,
                    title=f"pull {n}",
                    merged=merged,
                    merged_at="2026-01-01T12:00:00Z" if merged else None,
                    merge_commit_sha=gh._repo(repo).git.head()["sha"] if merged else None,
                )
                items.append(
                    f'[[item]]\nid = "{iid}"\nrepo = "{repo}"\nkind = "pull"\nnumber = {n}\n'
                )
            elif kind == "issue":
                gh.add_issue(repo, n, title=f"issue {n}")
                items.append(
                    f'[[item]]\nid = "{iid}"\nrepo = "{repo}"\nkind = "issue"\nnumber = {n}\n'
                )
            elif kind == "commits":
                items.append(
                    f'[[item]]\nid = "{iid}"\nrepo = "{repo}"\nkind = "commits"\n'
                    f'paths = ["src/mod{k % 10}/"]\npattern = "fix"\n'
                )
            else:
                items.append(
                    f'[[item]]\nid = "{iid}"\nrepo = "{repo}"\nkind = "code"\n'
                    f'paths = ["src/mod{k % 10}/core.py"]\npresent = ["VALUE"]\n'
                )
    return "".join(items)


class Worker:
    def __init__(self, tree: Path, config: Path):
        env = dict(os.environ, PYTHONPATH=str(tree), GITHUB_TOKEN="test-token")
        self.proc = subprocess.Popen(
            [sys.executable, "-c", WORKER, str(config)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
            cwd=str(config.parent),
        )

    def cycle(self) -> dict:
        self.proc.stdin.write("cycle\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


def measure(tree: Path, n_items: int, n_repos: int, changing: float, tmp: Path) -> dict:
    rng = random.Random(23)
    with FakeGitHub() as gh:
        tables = seed(gh, n_items, n_repos)
        folder = tmp / f"{tree.name}-{n_items}-{n_repos}-{changing}"
        folder.mkdir()
        config = folder / "watch.toml"
        config.write_text(
            f'[watcher]\ngithub_api_url = "{gh.url}"\nconcurrency = 8\ntimeout = "60s"\n'
            f'cycle_timeout = "30m"\n\n{tables}'
        )
        numbered = [
            (f"org/repo{r}", n)
            for r in range(n_repos)
            for n, rec in gh._repo(f"org/repo{r}").issues.items()
        ]
        worker = Worker(tree, config)
        try:
            for _ in range(3):  # warm-up: the cold read, then the ETags and memos settle
                worker.cycle()
                for r in range(n_repos):
                    gh.churn(f"org/repo{r}")
            changed = max(1, round(changing * n_items)) if changing else 0
            for repo, n in rng.sample(numbered, min(changed, len(numbered))):
                gh.update(repo, n, title=f"edited {rng.random():.6f}")
            gh.reset_requests()
            before = gh.rate_remaining
            out = worker.cycle()
            statuses = [r.status for r in gh.requests]
        finally:
            worker.close()
    return {
        "requests": len(statuses),
        "ok": statuses.count(200),
        "not_modified": statuses.count(304),
        "spend": before - gh.rate_remaining,
        "errors": out["errors"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--today", type=Path, required=True, help="a checkout before issue 23")
    parser.add_argument("--sizes", default="10,100,1000")
    parser.add_argument("--repos", default="1,20")
    args = parser.parse_args()
    trees = {"today": args.today.resolve(), "events-driven": ROOT}
    print(
        "| items | repos | cycle | today: requests (200 / 304) | events-driven: requests (200 / 304) |"
    )
    print("|---:|---:|---|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        for n_items in (int(s) for s in args.sizes.split(",")):
            for n_repos in (int(s) for s in args.repos.split(",")):
                if n_repos > n_items:
                    continue
                for label, changing in (("quiet", 0.0), ("1% changing", 0.01)):
                    cells = []
                    for name, tree in trees.items():
                        m = measure(tree, n_items, n_repos, changing, Path(tmp))
                        err = f", {m['errors']} errors" if m["errors"] else ""
                        cells.append(f"{m['requests']} ({m['ok']} / {m['not_modified']}{err})")
                        print(f"  {name} {n_items}/{n_repos} {label}: {m}", file=sys.stderr)
                    print(
                        f"| {n_items} | {n_repos} | {label} | {cells[0]} | {cells[1]} |", flush=True
                    )


if __name__ == "__main__":
    main()
