"""Rules against the fake GitHub over real HTTP: code items, dead paths, truncation, match scope,
hints, latest-release — through full cycles with a real SQLite store, and the CLI as a subprocess.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from watcher.config.load import load_config
from watcher.config.model import Item
from watcher.core.errors import GitHubError
from watcher.fakes.github import FakeGitHub
from watcher.github.client import GitHubClient
from watcher.loop.cycle import run_cycle
from watcher.poll.heads import resolve_ref
from watcher.poll.poller import read_code_item

ROOT = Path(__file__).resolve().parents[2]
SGL = "sgl-project/sglang"
MARLIN = "python/sglang/srt/layers/quantization/marlin_utils.py"

UNFIXED = """def check(size_n, min_thread_n):
    if size_n % min_thread_n != 0:
        raise ValueError(f"size_n = {size_n} not divisible by min_thread_n = {min_thread_n}")
"""
FIXED = """def check(size_n, min_thread_n):
    size_n = pad_to(size_n, min_thread_n)
    return size_n
"""

GUARD = f"""
[[item]]
id = "guard"
repo = "{SGL}"
kind = "code"
label = "SGLang's Marlin call site"
paths = ["{MARLIN}"]
present = ['\\bpad_?to\\b']
absent = ['not divisible by min_thread_n']
"""


def write_config(tmp_path: Path, gh: FakeGitHub, body: str, page: str = "") -> Path:
    path = tmp_path / "watch.toml"
    path.write_text(f'[watcher]\ngithub_api_url = "{gh.url}"\ntimeout = "5s"\n{body}{page}')
    return path


def cycle(cfg_path: Path, gh: FakeGitHub):
    cfg = load_config(cfg_path)
    with GitHubClient(gh.url, token="test-token", sleep=lambda s: None) as client:
        return run_cycle(cfg, client=client, no_smoke=True)


def item_doc(report, item_id: str) -> dict:
    return next(i for i in report.status["items"] if i["id"] == item_id)


def cli(args, cwd: Path, gh: FakeGitHub):
    env = dict(os.environ, PYTHONPATH=str(ROOT), GITHUB_API_URL=gh.url, GITHUB_TOKEN="test-token")
    return subprocess.run(
        [sys.executable, "-m", "watcher", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def assert_quiet_second_cycle(cfg_path: Path, gh: FakeGitHub, item_id: str, state: str) -> None:
    """Nothing changed upstream: every request is a 304 and no rate limit is spent."""
    gh.reset_requests()
    before = gh.rate_remaining
    again = cycle(cfg_path, gh)
    assert item_doc(again, item_id)["state"] == state
    assert gh.requests and all(r.status == 304 for r in gh.requests), [
        (r.path, r.status) for r in gh.requests if r.status != 304
    ]
    assert gh.rate_remaining == before
    assert again.stats["requests"] == again.stats["not_modified"]


# ------------------------------------------------------------------ code items


@pytest.mark.parametrize(
    "contents, state",
    [
        ({MARLIN: FIXED}, "present"),
        ({MARLIN: UNFIXED}, "absent"),
        ({"python/sglang/other.py": "x = 1\n"}, "unreadable"),
    ],
)
def test_code_item_states_and_a_free_second_cycle(gh, tmp_path, contents, state):
    gh.add_commit(SGL, message="init", date="2026-02-01T00:00:00Z", contents={"README.md": "hi"})
    head = gh.add_commit(SGL, message="change", date="2026-02-02T00:00:00Z", contents=contents)
    cfg_path = write_config(tmp_path, gh, GUARD)
    first = cycle(cfg_path, gh)
    doc = item_doc(first, "guard")
    assert doc["state"] == state and doc["kind"] == "code"
    ev = doc["evidence"]
    assert (ev["ref"], ev["sha"]) == ("main", head["sha"])
    if state == "present":
        (line,) = ev["lines"]
        assert line["path"] == MARLIN and line["line"] == 2 and "pad_to" in line["text"]
        assert line["url"] == f"https://github.com/{SGL}/blob/{head['sha']}/{MARLIN}#L2"
        assert doc["warnings"] == []
    elif state == "absent":
        (line,) = ev["lines"]
        assert line["line"] == 3 and "not divisible by min_thread_n" in line["text"]
        assert ev["line_count"] == 1 and ev["not_found"] == [r"\bpad_?to\b"]
    else:
        assert ev["lines"] == [] and ev["files_missing"] == [MARLIN]
        assert doc["warnings"] == [
            f"`{MARLIN}` no longer exists at main ({head['sha'][:7]}); this check cannot read it there"
        ]
    assert_quiet_second_cycle(cfg_path, gh, "guard", state)


def test_code_item_follows_the_fix_and_the_site_shows_the_line(gh, tmp_path):
    gh.add_commit(SGL, message="init", date="2026-02-01T00:00:00Z", contents={MARLIN: UNFIXED})
    page = (
        '[[blocker]]\nid = "marlin"\ntitle = "Marlin pad on SGLang"\nitems = ["guard"]\n'
        '[[page]]\nid = "p"\ntitle = "SGLang"\noutput = "P.md"\nblockers = ["marlin"]\n'
    )
    cfg_path = write_config(tmp_path, gh, GUARD, page)
    first = cycle(cfg_path, gh)
    assert item_doc(first, "guard")["state"] == "absent"
    text = (tmp_path / "P.md").read_text()
    assert "SGLang's Marlin call site](" in text and "): not fixed yet" in text  # one plain line
    # the matched line and its regex are the maintainer's: the site, not the reader's page
    assert "still there at" not in text and "raise ValueError" not in text
    site = (tmp_path / "site" / "item" / "guard.html").read_text()
    assert f"{MARLIN}#L3" in site
    fix = gh.add_commit(SGL, message="pad", date="2026-02-03T00:00:00Z", contents={MARLIN: FIXED})
    second = cycle(cfg_path, gh)
    assert item_doc(second, "guard")["state"] == "present"
    assert second.status["blockers"][0]["status"] == "fix-merged"
    assert f"/blob/{fix['sha']}/" in (tmp_path / "P.md").read_text()
    # the item's site page shows the line with its permalink
    site = (tmp_path / "site" / "item" / "guard.html").read_text()
    assert f"https://github.com/{SGL}/blob/{fix['sha']}/{MARLIN}#L2" in site


def test_latest_release_resolution(gh):
    """`latest-release` reads the newest release's tag, not the branch; without releases, the
    newest tag; without either, a clear error."""
    c1 = gh.add_commit(SGL, message="a", date="2026-01-01T00:00:00Z", contents={MARLIN: UNFIXED})
    item = Item(
        id="g",
        repo=SGL,
        kind="code",
        paths=(MARLIN,),
        ref="latest-release",
        present=(r"\bpad_?to\b",),
        absent=("not divisible by min_thread_n",),
    )
    with GitHubClient(gh.url, token="test-token", sleep=lambda s: None) as client:
        with pytest.raises(GitHubError, match="no releases and no tags"):
            resolve_ref(client, SGL, "latest-release")
        gh.add_tag(SGL, "v0.5.8", c1["sha"])
        assert resolve_ref(client, SGL, "latest-release") == "v0.5.8"
        gh.add_release(SGL, "v0.5.9", published_at="2026-01-02T00:00:00Z", sha=c1["sha"])
        c2 = gh.add_commit(SGL, message="b", date="2026-01-05T00:00:00Z", contents={MARLIN: FIXED})
        state, ev = read_code_item(client, item)  # main has the fix; the release does not
        assert (state, ev["ref"], ev["sha"]) == ("absent", "v0.5.9", c1["sha"])
        assert ev["lines"][0]["url"].startswith(f"https://github.com/{SGL}/blob/{c1['sha']}/")
        gh.add_release(SGL, "v0.6.0", published_at="2026-01-06T00:00:00Z", sha=c2["sha"])
        state, ev = read_code_item(client, item)
        assert (state, ev["ref"], ev["sha"]) == ("present", "v0.6.0", c2["sha"])
        assert read_code_item(client, item, "main")[0] == "present"
        assert read_code_item(client, item, c1["sha"])[0] == "absent"  # a sha: as the backtest


# ------------------------------------------------------------------ dead paths


def test_dead_path_warns_everywhere(gh, tmp_path):
    repo = "sgl-project/sglang"
    old = "sgl-kernel/csrc/gemm/marlin/"
    gh.add_commit(
        repo,
        message="Marlin: pad size_n",
        date="2026-01-10T00:00:00Z",
        contents={f"{old}marlin.cu": "// kernel", MARLIN: UNFIXED},
    )
    cfg_path = write_config(
        tmp_path,
        gh,
        f'[[item]]\nid = "marlin"\nrepo = "{repo}"\nkind = "commits"\nlabel = "Marlin fixes"\n'
        f'paths = ["{old}", "{MARLIN}"]\npattern = "(?i)pad"\nsince = "2026-01-01T00:00:00Z"\n'
        '[[blocker]]\nid = "b"\ntitle = "Marlin"\nitems = ["marlin"]\n'
        '[[page]]\nid = "p"\ntitle = "P"\noutput = "P.md"\nblockers = ["b"]\n',
    )
    assert item_doc(cycle(cfg_path, gh), "marlin")["warnings"] == []
    ok = cli(["validate", "--config", str(cfg_path), "--online"], tmp_path, gh)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "1 item(s) checked, all exist" in ok.stdout

    moved = gh.add_commit(
        repo,
        message="Move Marlin to JIT kernels",
        date="2026-02-13T00:00:00Z",
        contents={f"{old}marlin.cu": None, "python/sglang/jit_kernel/marlin.cuh": "// jit"},
    )
    warning = (
        f"`{old}` no longer exists at main ({moved['sha'][:7]});"
        f" this rule cannot see new commits there; removed in {moved['sha'][:7]}"
    )
    report = cycle(cfg_path, gh)
    doc = item_doc(report, "marlin")
    assert doc["warnings"] == [warning] and doc["state"] == "matched"  # the old match still stands
    status = json.loads((tmp_path / "site" / "status.json").read_text())
    assert next(i for i in status["items"] if i["id"] == "marlin")["warnings"] == [warning]
    page = (tmp_path / "P.md").read_text()  # readers get one plain line; the detail is elsewhere
    assert "no longer exists" not in page
    assert "⚠️ One of the checks behind this page needs attention; last fully checked" in page
    assert "no longer exists at main" in (tmp_path / "site" / "index.html").read_text()
    assert "no longer exists at main" in (tmp_path / "site" / "item" / "marlin.html").read_text()
    # a warning is shown everywhere, but it is not a change of state or evidence: no event
    # (an item event would also start a smoke run)
    assert not any(e["subject"] == "marlin" for e in report.events)

    explained = cli(["explain", "marlin", "--config", str(cfg_path)], tmp_path, gh)
    assert explained.returncode == 0, explained.stderr
    assert f"WARNING: {warning}" in explained.stdout
    explained = cli(["explain", "--config", str(cfg_path)], tmp_path, gh)
    assert f"WARNING: {warning}" in explained.stdout

    dead = cli(["validate", "--config", str(cfg_path), "--online"], tmp_path, gh)
    assert dead.returncode == 1
    assert f"[[item]] marlin: {warning}" in dead.stdout
    assert "1 item(s) checked, 1 problem(s)" in dead.stdout

    # gone on purpose (kept for the commits made there before the move): declared, it warns
    # nobody and validates clean
    cfg_path.write_text(
        cfg_path.read_text().replace(
            f'paths = ["{old}", "{MARLIN}"]', f'paths = ["{MARLIN}"]\nretired_paths = ["{old}"]'
        )
    )
    assert item_doc(cycle(cfg_path, gh), "marlin")["warnings"] == []
    ok = cli(["validate", "--config", str(cfg_path), "--online"], tmp_path, gh)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "Traceback" not in dead.stderr


def test_validate_online_names_an_unreadable_repo(gh, tmp_path):
    cfg_path = write_config(
        tmp_path,
        gh,
        '[[item]]\nid = "c"\nrepo = "o/empty"\nkind = "commits"\npaths = ["a/"]\n',
    )
    gh.fail("GET", r"/repos/o/empty$", status=404, times=-1)
    r = cli(["validate", "--config", str(cfg_path), "--online"], tmp_path, gh)
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert "[[item]] c: o/empty not found (GitHub answered 404): check `repo`" in r.stdout


def test_validate_online_checks_every_item_and_names_a_typo(gh, tmp_path):
    """The shipped default list validates clean against the real threads; a typo'd PR number,
    repository or ref fails by item and key, and a first cycle calls it a configuration error."""
    from watcher.fakes.scenarios import load, real_threads

    real_threads(gh)
    load(gh, "sglang_code")
    text = (ROOT / "watch.toml").read_text()
    (tmp_path / "watch.toml").write_text(text)
    ok = cli(["validate", "--config", "watch.toml", "--online"], tmp_path, gh)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "13 item(s) checked, all exist" in ok.stdout

    typo = text.replace("number = 40124", "number = 40125", 1)
    typo = typo.replace('repo = "MoonshotAI/FlashKDA"', 'repo = "MoonshotAI/FlashKD"', 1)
    assert typo.count("40125") == 1 and 'FlashKD"' in typo
    (tmp_path / "watch.toml").write_text(typo)
    bad = cli(["validate", "--config", "watch.toml", "--online"], tmp_path, gh)
    assert bad.returncode == 1 and "Traceback" not in bad.stderr
    assert (
        "watch.toml: [[item]] vllm-40124: vllm-project/vllm has no issue #40125"
        " (GitHub answered 404): check `repo` and `number`" in bad.stdout
    )
    assert "[[item]] flashkda-ampere: MoonshotAI/FlashKD not found" in bad.stdout
    assert "2 problem(s)" in bad.stdout

    first = cli(["check-now", "--config", "watch.toml", "--no-smoke"], tmp_path, gh)
    assert first.returncode == 2, first.stdout + first.stderr
    assert "[[item]] vllm-40124: vllm-project/vllm has no issue #40125" in first.stderr
    assert "[[item]] flashkda-ampere" in first.stderr and "never read" in first.stderr


# ------------------------------------------------------------------ truncation


def many_commits(gh: FakeGitHub, repo: str, n: int) -> None:
    for k in range(n):
        gh.add_commit(
            repo,
            message=f"speculative change {k}",
            date=f"2026-02-{1 + k // 10:02d}T00:{k % 60:02d}:00Z",
            contents={"src/a.py": f"v = {k}\n"},
        )


def test_truncation_warns_with_max_pages_and_reads_all_without(gh, tmp_path):
    repo = "o/many"
    many_commits(gh, repo, 250)
    base = f'[[item]]\nid = "s"\nrepo = "{repo}"\nkind = "commits"\npaths = ["src/"]\n'
    base += 'pattern = "speculative"\nsince = "2026-01-01T00:00:00Z"\n'
    full = cycle(write_config(tmp_path, gh, base), gh)
    doc = item_doc(full, "s")
    assert doc["evidence"]["match_count"] == 250 and doc["warnings"] == []
    assert len(doc["evidence"]["matches"]) == 20  # capped, with the count beside it
    assert doc["evidence"]["matches"][0]["subject"] == "speculative change 249"  # newest first

    capped_dir = tmp_path / "capped"
    capped_dir.mkdir()
    capped = cycle(write_config(capped_dir, gh, base + "max_pages = 1\n"), gh)
    doc = item_doc(capped, "s")
    assert doc["evidence"]["match_count"] == 100
    (warning,) = doc["warnings"]
    assert warning.startswith("Read only the newest 100 commits in `src/` (max_pages = 1)")
    assert (
        "back to 2026-02-16" in warning
        and "older commits since 2026-01-01 were not read" in warning
    )
    page_dir = capped_dir / "site" / "item" / "s.html"
    assert "Read only the newest 100 commits" in page_dir.read_text()


# ------------------------------------------------------------------ match scope and terms


def test_match_subject_vs_message_and_terms_over_http(gh, tmp_path):
    repo = "sgl-project/sglang"
    path = "python/sglang/srt/layers/attention/"
    gh.add_commit(
        repo,
        message="Refactor attention backends\n\nPrepares for draft models on mamba.",
        date="2026-02-01T00:00:00Z",
        contents={f"{path}a.py": "1"},
    )
    real = gh.add_commit(
        repo,
        message="[Spec V2] Support specV2 for mamba hybrid attention",
        date="2026-02-27T00:00:00Z",
        contents={f"{path}a.py": "2"},
    )
    gh.add_commit(
        repo,
        message="support qwen3-next eagle3",
        date="2026-01-31T00:00:00Z",
        contents={f"{path}b.py": "1"},
    )
    spec = r"(?i)\b(eagle3?|draft\w*|spec(ulative)?[-_ ]?(v2|decod\w*))\b"
    body = (
        f'[[item]]\nid = "subject"\nrepo = "{repo}"\nkind = "commits"\npaths = ["{path}"]\n'
        f"terms = ['{spec}', '(?i)\\b(mamba|hybrid)\\b']\n"
        f'[[item]]\nid = "message"\nrepo = "{repo}"\nkind = "commits"\npaths = ["{path}"]\n'
        f"terms = ['{spec}', '(?i)\\b(mamba|hybrid)\\b']\nmatch = \"message\"\n"
    )
    report = cycle(write_config(tmp_path, gh, body), gh)
    subject = item_doc(report, "subject")["evidence"]
    assert [m["sha"] for m in subject["matches"]] == [real["sha"]]  # eagle3 alone: no hybrid term
    message = item_doc(report, "message")["evidence"]
    assert message["match_count"] == 2  # the refactor's body mentions draft and mamba


# ------------------------------------------------------------------ hints


def test_hint_fixed_elsewhere_never_clears_but_is_shown(gh, tmp_path):
    vllm = "vllm-project/vllm"
    gh.add_commit(vllm, message="base", date="2026-05-01T00:00:00Z")
    fix = gh.add_commit(vllm, message="[Kernel] Marlin pad (#45295)", date="2026-06-12T00:00:00Z")
    gh.add_release(vllm, "v0.24.0", published_at="2026-07-01T00:00:00Z")
    gh.add_pull(
        vllm,
        45295,
        title="[Kernel] Marlin pad",
        state="closed",
        merged=True,
        merge_commit_sha=fix["sha"],
        merged_at="2026-06-12T00:00:00Z",
    )
    gh.add_commit(SGL, message="init", date="2026-02-01T00:00:00Z", contents={MARLIN: UNFIXED})
    body = GUARD + (
        f'[[item]]\nid = "vllm-fix"\nrepo = "{vllm}"\nkind = "pull"\nnumber = 45295\n'
        'label = "Marlin pad fix in vLLM"\n'
        '[[blocker]]\nid = "marlin"\ntitle = "Marlin pad on SGLang"\nitems = ["guard"]\n'
        'hints = ["vllm-fix"]\n'
        '[[recipe]]\nid = "r"\nengine = "sglang"\ncommand = ["x"]\nblockers = ["marlin"]\n'
        '[[page]]\nid = "p"\ntitle = "P"\noutput = "P.md"\nblockers = ["marlin"]\nrecipes = ["r"]\n'
    )
    cfg_path = write_config(tmp_path, gh, body)
    report = cycle(cfg_path, gh)
    sentence = "fixed in vLLM #45295, first in v0.24.0; not detected in SGLang"
    blocker = report.status["blockers"][0]
    assert blocker["status"] == "blocked" and report.status["pages"][0]["status"] == "blocked"
    assert blocker["hints"] == [
        {"item": "vllm-fix", "satisfied": True, "state": "merged", "text": sentence}
    ]
    page = (tmp_path / "P.md").read_text()
    assert page.startswith("# P — blocked")
    # one plain line on the page, "#45295" set as inline code so GitHub does not link it; the
    # rest of the evidence ("not detected in SGLang") is the site's and explain's
    line = "merged, first in v0.24.0"
    assert f"Marlin pad fix in vLLM](https://github.com/{vllm}/pull/45295): {line}" in page
    assert sentence in (tmp_path / "site" / "index.html").read_text()
    explained = cli(["explain", "marlin", "--config", str(cfg_path)], tmp_path, gh)
    assert f"vllm-fix: {sentence}" in explained.stdout
    assert "hints (shown for information, never clear it)" in explained.stdout


def test_an_unreadable_tree_is_said_not_guessed(gh, tmp_path):
    """A tree GitHub cannot give (503: unknown is not missing): the commit stream is still read
    and says it could not check its paths; a code item, which needs the tip, is marked stale."""
    gh.add_commit(SGL, message="Marlin: pad", date="2026-01-10T00:00:00Z", contents={MARLIN: FIXED})
    body = GUARD + (
        f'[[item]]\nid = "c"\nrepo = "{SGL}"\nkind = "commits"\npaths = ["{MARLIN}"]\n'
        'pattern = "pad"\n'
    )
    cfg_path = write_config(tmp_path, gh, body)
    assert item_doc(cycle(cfg_path, gh), "guard")["state"] == "present"
    # a push that touches the watched file: the tip (and its tree) must be read again
    gh.add_commit(
        SGL, message="Marlin: touch", date="2026-01-11T00:00:00Z", contents={MARLIN: FIXED}
    )
    gh.fail("GET", r"/git/trees/", status=503, times=-1, body={"message": "not recorded"})
    report = cycle(cfg_path, gh)
    commits = item_doc(report, "c")
    assert commits["state"] == "matched" and not commits["stale"]
    (warning,) = commits["warnings"]
    assert warning.startswith("could not check that the watched paths still exist at the default")
    assert "HTTP 503" in warning
    guard = item_doc(report, "guard")
    assert guard["state"] == "present" and guard["stale"] and "HTTP 503" in guard["error"]
