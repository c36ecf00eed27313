"""How long finding our sticky comment takes as an issue's comment count grows (fake GitHub).

Run: python bench/notify_scan.py — prints comments, pages read, requests and seconds per search
(PyGithub over real HTTP on 127.0.0.1, 100 comments a page, our comment last).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from watcher.fakes.github import FakeGitHub  # noqa: E402
from watcher.github.comments import GithubComments  # noqa: E402
from watcher.notify.plan import carries, status_marker  # noqa: E402


def main() -> None:
    marker = status_marker("sglang")
    print(f"{'comments':>8}  {'requests':>8}  {'seconds':>8}")
    for n in (30, 250, 1000, 3000):
        with FakeGitHub() as gh:
            gh.add_issue("o/r", 1, title="tracking")
            for i in range(n - 1):
                gh.add_comment("o/r", 1, body=f"comment {i}", user=f"user{i % 9}")
            gh.add_comment("o/r", 1, body=f"{marker}\nstatus", user="watcher-bot")
            api = GithubComments("o/r", 1, token="test-token", base_url=gh.url)
            gh.reset_requests()
            start = time.perf_counter()
            login = api.login()
            found = [c for c in api.list_comments() if c.login == login and carries(c, marker)]
            took = time.perf_counter() - start
            assert len(found) == 1
            print(f"{n:>8}  {len(gh.requests):>8}  {took:>8.3f}")
            api.close()


if __name__ == "__main__":
    main()
