"""Issue 33 item 9: the shipped watch list's quiet cycle on a moving GitHub costs the documented
5 answers of 200 (one compare per watched branch, one events feed per repository of tracked
threads). The closed unmerged pull, its timeline, its superseding pull and the repository object
(which a star changes) are not re-read: trust.superseding takes the default branch from the
pull's own JSON."""

from __future__ import annotations

from pathlib import Path

from watcher.config.load import load_config
from watcher.fakes.scenarios import load, real_threads
from watcher.github.client import GitHubClient
from watcher.loop.cycle import run_cycle

SHIPPED = Path(__file__).resolve().parents[2] / "watch.toml"


def test_a_quiet_cycle_of_the_shipped_list_costs_five_points(fake_github, tmp_path, monkeypatch):
    gh = fake_github
    real_threads(gh)
    load(gh, "sglang_code")
    text = SHIPPED.read_text().replace(
        "[watcher]\n", f'[watcher]\ngithub_api_url = "{gh.url}"\n', 1
    )
    (tmp_path / "watch.toml").write_text(text)
    monkeypatch.chdir(tmp_path)
    cfg = load_config(tmp_path / "watch.toml")
    for n in range(2):
        gh.reset_requests()
        with GitHubClient(gh.url, token="test-token") as client:
            report = run_cycle(cfg, client=client, no_smoke=True)
        assert report.item_errors == {}
        if n == 0:
            repos = sorted(r.full_name for r in gh._repos.values())
            for repo in repos:  # a star and a push to a file nobody watches, everywhere
                gh.churn(repo)
    paid = sorted(r.path for r in gh.requests if r.status == 200)
    assert len(paid) == 5, paid
    assert (
        sum("/compare/" in p for p in paid) == 3 and sum(p.endswith("/events") for p in paid) == 2
    )
    asked = {r.path for r in gh.requests}
    assert not any("/pulls/" in p or "/timeline" in p for p in asked), asked
    assert not any(p in asked for p in (f"/repos/{repo}" for repo in repos))
