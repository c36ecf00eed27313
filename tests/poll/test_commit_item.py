"""One commit as an item (a tracker row's commit link): read by GET /repos/{o}/{r}/commits/{sha},
`committed`, with the first release that contains it; a sha GitHub does not know is an error,
never a state; the config names a missing or malformed sha."""

from __future__ import annotations

import pytest

from watcher.config.load import parse_config
from watcher.config.model import Item
from watcher.core.errors import ConfigError
from watcher.github.client import GitHubClient
from watcher.judge.states import item_satisfied
from watcher.poll.poller import Poller

REPO = "ggml-org/llama.cpp"


def read(gh, it):
    with GitHubClient(gh.url, token="test-token", retries=1, sleep=lambda s: None) as client:
        return Poller(client).poll(it)


def test_a_commit_and_the_first_release_holding_it(gh):
    gh.add_commit(REPO, message="base", date="2026-06-01T00:00:00Z")
    gh.add_release(REPO, "b5000", published_at="2026-06-02T00:00:00Z")
    fix = gh.add_commit(REPO, message="q4 tiles for sm86\n\nbody", date="2026-07-09T08:00:00Z")
    later = gh.add_commit(REPO, message="unrelated", date="2026-07-10T00:00:00Z")
    short = fix["sha"][:7]
    it = Item(id="fix", repo=REPO, kind="commit", sha=short, require_release=True)
    obs = read(gh, it)
    assert (obs.state, obs.title, obs.in_release) == ("committed", "q4 tiles for sm86", None)
    assert obs.updated_at.startswith("2026-07-09") and obs.details["sha"] == fix["sha"]
    row = {"state": obs.state, "in_release": obs.in_release}
    assert not item_satisfied(it, row)  # require_release: not shipped yet
    gh.add_release(REPO, "b5100", published_at="2026-07-11T00:00:00Z", sha=later["sha"])
    gh.add_release(REPO, "b5200", published_at="2026-07-12T00:00:00Z")
    obs = read(gh, it)
    assert obs.in_release == "b5100"
    assert item_satisfied(it, {"state": obs.state, "in_release": obs.in_release})


def test_an_unknown_sha_is_an_error_not_a_state(gh):
    gh.add_commit(REPO, message="base", date="2026-06-01T00:00:00Z")
    obs = read(gh, Item(id="gone", repo=REPO, kind="commit", sha="deadbeef"))
    assert obs.state is None and obs.error


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ("", "sha.*is required for kind 'commit'"),
        ('sha = "XYZ"', "sha.*hex digits"),
        ('sha = "abcdef1"\nnumber = 3', "number.*does not apply to kind 'commit'"),
    ],
)
def test_the_config_names_the_sha(tmp_path, extra, message):
    text = f'[[item]]\nid = "c"\nrepo = "{REPO}"\nkind = "commit"\n{extra}\n'
    with pytest.raises(ConfigError, match=message):
        parse_config(text, tmp_path / "watch.toml")
