"""Poll-cycle benchmark: watcher's concurrent conditional cycle against the naive way.

50 pull requests on the fake GitHub with 50 ms latency per request. Measures, in one run and side by
side: watcher cold and warm (wall time, requests, 304s, rate-limit spend) and a naive sequential
PyGithub loop (`get_repo().get_pull()` per item), cold and again. Prints medians of --repeat runs.

    python bench/poll_cycle.py [--items 50] [--latency 0.05] [--repeat 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from watcher.config.load import parse_config  # noqa: E402
from watcher.fakes.github import FakeGitHub  # noqa: E402
from watcher.github.client import GitHubClient  # noqa: E402
from watcher.loop.cycle import run_cycle  # noqa: E402

REPO = "bench-org/engine"


def config_text(url: str, n: int) -> str:
    items = "".join(
        f'[[item]]\nid = "pr-{i}"\nrepo = "{REPO}"\nkind = "pull"\nnumber = {i}\n\n'
        for i in range(1, n + 1)
    )
    return f'[watcher]\ngithub_api_url = "{url}"\nconcurrency = 8\n\n{items}'


def watcher_cycle(gh: FakeGitHub, cfg) -> dict:
    gh.reset_requests()
    before = gh.rate_remaining
    client = GitHubClient(gh.url, token="test-token")
    t0 = time.perf_counter()
    report = run_cycle(cfg, client=client, no_smoke=True)
    wall = time.perf_counter() - t0
    client.close()
    return {
        "wall": wall,
        "requests": len(gh.requests),
        "not_modified": report.stats["not_modified"],
        "spend": before - gh.rate_remaining,
    }


def naive_cycle(gh: FakeGitHub, n: int, throttle: bool) -> dict:
    """PyGithub 2.x waits 0.25 s between requests by default (seconds_between_requests)."""
    from github import Auth, Github

    gh.reset_requests()
    before = gh.rate_remaining
    t0 = time.perf_counter()
    extra = {} if throttle else {"seconds_between_requests": 0}
    g = Github(base_url=gh.url, auth=Auth.Token("test-token"), retry=None, **extra)
    for i in range(1, n + 1):
        pull = g.get_repo(REPO).get_pull(i)
        _ = (pull.state, pull.merged, pull.title)
    wall = time.perf_counter() - t0
    return {
        "wall": wall,
        "requests": len(gh.requests),
        "not_modified": 0,
        "spend": before - gh.rate_remaining,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--items", type=int, default=50)
    ap.add_argument("--latency", type=float, default=0.05)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    rows: dict[str, list[dict]] = {
        "watcher cold": [],
        "watcher warm": [],
        "naive PyGithub": [],
        "naive, no throttle": [],
        "naive again": [],  # PyGithub sends no conditional requests: warm costs the same
    }
    for _ in range(args.repeat):
        with FakeGitHub(latency=args.latency) as gh, tempfile.TemporaryDirectory() as tmp:
            for i in range(1, args.items + 1):
                gh.add_pull(REPO, i, title=f"PR {i}", state="open")
            path = Path(tmp) / "watch.toml"
            path.write_text(config_text(gh.url, args.items))
            cfg = parse_config(path.read_text(), path)
            rows["watcher cold"].append(watcher_cycle(gh, cfg))
            rows["watcher warm"].append(watcher_cycle(gh, cfg))
            rows["naive PyGithub"].append(naive_cycle(gh, args.items, throttle=True))
            rows["naive, no throttle"].append(naive_cycle(gh, args.items, throttle=False))
            rows["naive again"].append(naive_cycle(gh, args.items, throttle=False))
    sequential = args.items * args.latency
    print(
        f"{args.items} items, {args.latency * 1000:.0f} ms latency per request, median of {args.repeat} runs"
    )
    print(f"sum of per-item latencies (one request each, sequential): {sequential:.2f} s\n")
    print(
        f"{'mode':<16} {'wall s':>8} {'x naive':>8} {'requests':>9} {'304s':>6} {'rate spent':>11}"
    )
    naive = statistics.median(r["wall"] for r in rows["naive PyGithub"])
    for name, rs in rows.items():
        wall = statistics.median(r["wall"] for r in rs)
        print(
            f"{name:<16} {wall:>8.2f} {wall / naive:>8.2f} {statistics.median(r['requests'] for r in rs):>9.0f}"
            f" {statistics.median(r['not_modified'] for r in rs):>6.0f} {statistics.median(r['spend'] for r in rs):>11.0f}"
        )
    warm_spend = [r["spend"] for r in rows["watcher warm"]]
    assert not any(warm_spend), f"a quiet (warm) cycle spent rate limit: {warm_spend}"
    print("\nwatcher warm cycles spent 0 rate limit (asserted)")
    cold = statistics.median(r["wall"] for r in rows["watcher cold"])
    print(f"\nwatcher cold cycle / sequential latency sum: {cold / sequential:.2f}")


if __name__ == "__main__":
    main()
