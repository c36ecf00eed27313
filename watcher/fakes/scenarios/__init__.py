"""Seeded scenarios for the fake GitHub, kept as data (one JSON file each) and a small loader.

A scenario lists repos; each repo's `commits` (in order; `tag` tags that commit, `contents`
gives file bytes, `id` names it for `merge_commit`), `releases`, `threads` (issues and pulls,
`kind` says which) and `timeline` (events or cross-references), applied in that order. A commit
that lists `files` without `contents` writes them as small placeholder files, so the scenario's
trees hold the paths its commits touch (watched paths are checked against the tree).
"""

from __future__ import annotations

import json
from importlib import resources
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from watcher.fakes.github import FakeGitHub

VLLM = "vllm-project/vllm"
FLA = "fla-org/flash-linear-attention"
SGLANG = "sgl-project/sglang"


def load(gh: FakeGitHub, name: str) -> None:
    """Seed `gh` with scenarios/{name}.json. Deterministic: same ids, shas and bodies each time."""
    text = resources.files(__package__).joinpath(f"{name}.json").read_text(encoding="utf-8")
    for repo in json.loads(text)["repos"]:
        _seed_repo(gh, repo)


def real_threads(gh: FakeGitHub) -> None:
    """The upstream threads watcher tracks (design.md, "real world"): see real_threads.json."""
    load(gh, "real_threads")


def _seed_repo(gh: FakeGitHub, spec: dict) -> None:
    repo = spec["name"]
    shas: dict[str, str] = {}
    for commit in spec.get("commits", ()):
        fields = {k: v for k, v in commit.items() if k not in ("id", "tag")}
        if fields.get("files") and "contents" not in fields:
            fields["contents"] = {f: f"# {f}\n" for f in fields["files"]}
        made = gh.add_commit(repo, **fields)
        if "id" in commit:
            shas[commit["id"]] = made["sha"]
        if "tag" in commit:
            gh.add_tag(repo, commit["tag"])
    for release in spec.get("releases", ()):
        gh.add_release(repo, **release)
    for thread in spec.get("threads", ()):
        fields = {k: v for k, v in thread.items() if k not in ("kind", "number", "merge_commit")}
        if "merge_commit" in thread:
            fields["merge_commit_sha"] = shas[thread["merge_commit"]]
        add = gh.add_pull if thread["kind"] == "pull" else gh.add_issue
        add(repo, thread["number"], **fields)
    for item in spec.get("timeline", ()):
        if "cross_reference" in item:
            gh.add_cross_reference(repo, item["number"], **item["cross_reference"])
        else:
            gh.add_timeline_event(repo, item["number"], item["event"])
