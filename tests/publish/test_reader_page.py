"""SGLANG.md speaks to the guide's readers: the default page rendered from a seeded store.

Compared against the hand-kept page (/work/shared/seeds/SGLANG.md): the same sections in the same
order, its prose kept through fragments, and none of watcher's insides (config ids, run ids, raw
exceptions, API URLs, CLI hints, notes to the maintainer) in what a reader sees.
"""

from __future__ import annotations

import re
from datetime import timedelta

import markdown
import pytest
from kits.handkept import HAND_KEPT, hand_kept_subset, reader_words, watch_section
from kits.site_seed import REPO, make_config, seed, smoke_doc

from watcher.core.clock import iso
from watcher.loop.cycle import run_cycle
from watcher.publish.context import display_command
from watcher.store.db import Store


def reader_text(page: str) -> str:
    """What a reader reads: no HTML comments, no link targets, no fenced code (the recipe)."""
    text = re.sub(r"<!--.*?-->", "", page, flags=re.S)
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    return re.sub(r"\]\([^)]*\)", "]", text)


@pytest.fixture
def seeded(tmp_path):
    cfg = make_config(tmp_path)
    last = seed(cfg)
    return cfg, last


def page_of(cfg) -> str:
    return cfg.resolve(cfg.pages[0].output).read_text()


def internal_ids(cfg) -> set[str]:
    ids = {i.id for i in cfg.items} | {b.id for b in cfg.blockers} | {r.id for r in cfg.recipes}
    ids |= {s for b in cfg.blockers for s in b.signatures}
    return ids


def test_no_internal_ids_errors_urls_or_maintainer_notes(seeded):
    cfg, _ = seeded
    page = page_of(cfg)
    text = reader_text(page)
    for ident in sorted(internal_ids(cfg)):
        assert not re.search(rf"(?<![\w/-]){re.escape(ident)}(?![\w-])", text), ident
    assert not re.search(r"\brun-\d{4}\b", page), "a run id reached the page"
    for raw in (
        "Traceback",
        "RuntimeError",
        "NVMLError",
        "HTTP 5",
        "HTTP 4",
        "--any-hardware",
        "api.github.com",
        "/repos/",
        "watcher explain",
        "this file is yours",
        "as the old page called it",
        "seed page",
        "watcher re-reads",
    ):
        assert raw not in page, raw
    assert "items is" not in page and "item(s)" not in page


def test_headline_and_one_status_line_per_line(seeded):
    cfg, _ = seeded
    page = page_of(cfg)
    first = page.splitlines()[0]
    assert re.match(
        # the seed's statuses start at its first check that read something (no "for N days")
        r"^# SGLang — blocked(?: for \d+ days?)? on 4 upstream fixes <!-- volatile -->$",
        first,
    )
    html = markdown.markdown(page)
    quote = html[html.index("<blockquote>") : html.index("</blockquote>")]
    paragraphs = re.findall(r"<p>(.*?)</p>", quote, flags=re.S)
    assert paragraphs[0].startswith("<strong>Status: blocked</strong>")
    assert paragraphs[1].startswith("Last read from GitHub: 2026-11-23 12:00 UTC.")
    assert all("\n" not in p for p in paragraphs)


def test_recipe_is_a_readable_multi_line_command_without_watchers_name(seeded):
    cfg, _ = seeded
    page = page_of(cfg)
    blocks = re.findall(r"```bash\n(.*?)\n```", page, flags=re.S)
    assert len(blocks) == 3  # SGLang MTP, EAGLE-3, no spec-decode
    for block in blocks:
        lines = block.splitlines()
        assert len(lines) > 8 and all(line.endswith(" \\") for line in lines[:-1])
        assert "--name" not in block and "watcher-" not in block
        assert lines[0].startswith("docker run") and any(
            line.strip() == "python -m sglang.launch_server \\" for line in lines
        )
    assert display_command(cfg.recipe("sglang-eagle-tp1")) in page


def test_the_hand_kept_pages_sections_are_kept(seeded):
    """Side by side with the seed: its headings in its order, its prose through fragments."""
    cfg, _ = seeded
    page = page_of(cfg)
    headings = [
        "## TL;DR",
        "## Pros (when it works)",
        "## Cons (right now, on this model class)",
        "## Watch list — what would unblock SGLang on this stack",
        "## Recipe — TBD",
        "## When to revisit",
        "## See also",
    ]
    at = [page.index(h) for h in headings]
    assert at == sorted(at)
    for kept in (
        "Two paths:",
        "**SGLang's loader keeps the mapping**",
        "**SGLang-side patch**",
        "doesn't roll back cleanly",
        "FlashKDA",
        "Watch list, not unblocker.",
        "Until then, the vLLM path is the validated option for serious local use.",
    ):
        assert kept in page, kept
    assert "## Tuning notes" not in page  # the packaged tuning fragment holds only a comment
    assert "\n\n\n" not in page


def test_a_trigger_without_its_gpu_reads_as_waiting(seeded):
    """A host without the GPU: the page says what the reader needs, the details stay out."""
    cfg, last = seeded
    store = Store(cfg.db_path)
    try:
        store.put_trigger(
            "sglang-nospec-tp1",
            state="waiting",
            reasons=["item sglang-marlin of blocker marlin-pad changed"],
            since=iso(last),
            updated_at=iso(last),
            note="no GPU (NVMLError_LibraryNotFound) (--any-hardware runs it anyway)",
        )
        store.add_smoke_run(
            smoke_doc(
                9,
                "sglang-nospec-tp1",
                last + timedelta(minutes=1),
                outcome="skipped",
                signature=None,
                reason="NVMLError_LibraryNotFound (--any-hardware runs it anyway)",
                hardware={"gpus": [], "matches_target": False},
            )
        )
    finally:
        store.close()
    run_cycle(cfg, offline=True, now=last + timedelta(minutes=5))
    page = page_of(cfg)
    assert "A test is due since 2026-11-23, waiting for an RTX 3090 to test on." in page
    assert "NVMLError" not in page and "--any-hardware" not in page


def test_a_failed_attempt_is_kept_apart_from_the_last_successful_read(tmp_path, fake_github):
    from watcher.github.client import GitHubClient

    cfg = make_config(tmp_path)
    last = seed(cfg)
    fake_github.fail("GET", r".*", status=503, times=-1)
    with GitHubClient(fake_github.url, token="t", retries=0) as client:
        report = run_cycle(cfg, client=client, now=last + timedelta(days=2), no_smoke=True)
    page = page_of(cfg)
    assert "Last read from GitHub: 2026-11-23 12:00 UTC." in page
    assert "The latest check (2026-11-25 14:00 UTC) could not read GitHub" in page
    runs = report.status["runs"]
    assert runs["last_successful_read"] == "2026-11-23T12:00:00Z"
    assert runs["last_attempt"] == {"at": "2026-11-25T14:00:00Z", "failed": True}
    assert runs["stale_at"] < runs["last_attempt"]["at"]
    assert report.token_rejected is None  # a 503 is trouble, not a refused token


def test_before_the_first_read_the_page_says_not_checked_yet(tmp_path):
    cfg = make_config(tmp_path)
    run_cycle(cfg, offline=True)
    page = page_of(cfg)
    assert page.startswith("# SGLang — not checked yet")
    assert "Last read from GitHub: not yet." in page


@pytest.mark.parametrize("status", [401, 403])
def test_a_refused_token_fails_the_command_loudly(tmp_path, fake_github, monkeypatch, status):
    from click.testing import CliRunner

    from watcher.cli import cli

    cfg = make_config(tmp_path)
    text = cfg.path.read_text().replace(
        "# github_api_url = ", f'github_api_url = "{fake_github.url}"\n# '
    )
    cfg.path.write_text(text)
    monkeypatch.setenv("GITHUB_TOKEN", "expired-token")
    fake_github.fail("GET", r".*", status=status, times=-1, body={"message": "Bad credentials"})
    result = CliRunner().invoke(cli, ["check-now", "--config", str(cfg.path), "--no-smoke"])
    assert result.exit_code == 1
    assert f"GitHub rejected the token (HTTP {status})" in result.stderr
    assert "Traceback" not in result.stderr
    assert (tmp_path / "docs" / "engines" / "SGLANG.md").exists()  # the page is still rendered


def test_a_network_outage_keeps_todays_behaviour(tmp_path, fake_github):
    from click.testing import CliRunner

    from watcher.cli import cli

    cfg = make_config(tmp_path)
    text = cfg.path.read_text().replace(
        "# github_api_url = ", f'github_api_url = "{fake_github.url}"\n# '
    )
    cfg.path.write_text(text)
    fake_github.fail("GET", r".*", status=502, times=-1)
    result = CliRunner().invoke(cli, ["check-now", "--config", str(cfg.path), "--no-smoke"])
    assert result.exit_code == 0 and "rejected the token" not in result.stderr


def test_explain_has_the_details_the_page_leaves_out(seeded):
    from click.testing import CliRunner

    from watcher.cli import cli

    cfg, last = seeded
    store = Store(cfg.db_path)
    try:
        store.put_trigger(
            "sglang-nospec-tp1",
            state="waiting",
            reasons=["item sglang-marlin of blocker marlin-pad changed"],
            since=iso(last),
            attempts=3,
            note="NVMLError_LibraryNotFound (--any-hardware runs it anyway)",
        )
    finally:
        store.close()
    out = CliRunner().invoke(cli, ["explain", "sglang", "--config", str(cfg.path)]).stdout
    assert "pending: waiting since 2026-11-23T14:00:00Z (3 tries)" in out
    assert "last note: NVMLError_LibraryNotFound (--any-hardware runs it anyway)" in out
    assert "reason: server died at startup: size_n = 96 is not divisible" in out


def test_the_page_links_to_the_site_and_the_tracking_issue_when_configured(tmp_path):
    from watcher.config.load import load_config

    cfg = make_config(tmp_path)
    text = cfg.path.read_text() + '\n[site]\nurl = "https://club-3090.github.io/watch/"\n'
    text = text.replace(
        '# repo = "your-org/your-guide"\n# issue = 1', 'repo = "club/guide"\nissue = 7'
    )
    cfg.path.write_text(text)
    cfg = load_config(cfg.path)
    seed(cfg)
    page = page_of(cfg)
    assert (
        "Details of every check and test: [status site]"
        "(https://club-3090.github.io/watch/page/sglang.html)"
        " · [tracking issue](https://github.com/club/guide/issues/7)." in page
    )


def test_ready_to_test_with_a_blocker_still_open_says_so():
    """One recipe clear while another still waits (the demo's state): the headline must not claim
    that every upstream fix has landed."""
    from watcher.publish.prose import headline

    partly = headline(
        "ready-to-test",
        since="2026-11-20T00:00:00Z",
        now="2026-11-23T00:00:00Z",
        open_blockers=1,
        gpu="an RTX 3090",
    )
    assert partly == (
        "ready to test for 3 days: one recipe's fixes have landed, not yet tested on an RTX 3090;"
        " the others still wait on 1 upstream fix"
    )
    clear = headline("ready-to-test", since=None, now=None, open_blockers=0, gpu="an RTX 3090")
    assert clear == "ready to test: the upstream fixes have landed, not yet tested on an RTX 3090"


# ------------------------------------------------------------------ length, once, and day one
def test_the_page_is_not_much_longer_than_the_hand_kept_one_for_the_same_content(tmp_path):
    """The hand-kept page covered two blockers, one optional watch and one recipe: the same
    content through the default list stays within 1.3x its words, and so does its watch list
    (one plain line per tracked thread; the evidence is the site's, explain's and status.json's)."""
    from watcher.config.load import load_config

    (tmp_path / "watch.toml").write_text(hand_kept_subset((REPO / "watch.toml").read_text()))
    cfg = load_config(tmp_path / "watch.toml")
    assert [b.id for b in cfg.blockers] == ["marlin-pad", "deltanet-rollback"]
    seed(cfg)
    page = page_of(cfg)
    hand = HAND_KEPT.read_text()
    assert len(reader_words(hand)) > 600 and len(reader_words(watch_section(hand))) > 200
    ours, theirs = len(reader_words(page)), len(reader_words(hand))
    assert ours <= 1.3 * theirs, f"{ours} words against the hand-kept page's {theirs}"
    ours, theirs = len(reader_words(watch_section(page))), len(reader_words(watch_section(hand)))
    assert ours <= 1.3 * theirs, f"watch list: {ours} words against the hand-kept {theirs}"


def test_one_plain_line_per_tracked_thread(seeded):
    """Each thread of the watch list is one line: its label, linked, and its state in a few
    words; where and how it was read (refs, "not detected in", repository names) is not there."""
    cfg, _ = seeded
    page = page_of(cfg)
    watch = watch_section(page)
    lines = [line for line in watch.splitlines() if line.startswith("- [")]
    assert len(lines) == len(cfg.items), watch  # every item is a blocker's or "also watching"
    for line in lines:
        label, state = re.fullmatch(
            r"- \[(.+?)\]\([^)]+\)(?: \(GitHub: “.+”\))?: (.+)", line
        ).groups()
        assert len(state.split()) <= 7, line
        for evidence in ("not detected in", "code at", " in SGLang", " in vLLM", "Track"):
            assert evidence not in state, line
    assert "Context only:" in watch and "Any one clears it:" in watch
    assert "never clears it" not in watch and "Hint from elsewhere" not in watch


def test_each_blocker_description_once_and_no_rule_internals(seeded):
    cfg, _ = seeded
    page = page_of(cfg)
    for b in cfg.blockers:
        first = b.description.split(" (")[0][:60]
        assert page.count(first.replace("_", "\\_")) == 1, b.id
    for inside in (
        "\\b",
        "(?i)",
        "not found:",
        "rate limit",
        "(304)",
        "no longer exists",
        "this rule",
    ):
        assert inside not in page, inside
    for i in cfg.items:
        for regex in (*i.present, *i.absent):
            assert regex not in page


def test_maintainer_warnings_are_one_plain_line_on_the_page(seeded):
    cfg, last = seeded
    store = Store(cfg.db_path)
    try:
        row = store.items()["sglang-marlin"]
        details = dict(row.get("details") or {})
        details["warnings"] = [
            "`old/path.cu` no longer exists at main (abc1234); this rule cannot"
            " see new commits there"
        ]
        store.upsert_item(dict(row, details=details))
    finally:
        store.close()
    run_cycle(cfg, offline=True, now=last + timedelta(minutes=5))
    page = page_of(cfg)
    assert "old/path.cu" not in page and "⚠️ 1 warning" not in page
    lines = [
        line for line in page.splitlines() if "needs attention" in line or "need attention" in line
    ]
    assert len(lines) == 1 and "last fully checked" in lines[0]


def test_day_one_says_first_check_once(tmp_path, fake_github):
    from watcher.fakes.scenarios import load, real_threads
    from watcher.github.client import GitHubClient

    cfg = make_config(tmp_path)
    real_threads(fake_github)
    load(fake_github, "sglang_code")
    with GitHubClient(fake_github.url, token="test-token") as client:
        run_cycle(cfg, client=client, no_smoke=True)
    page = page_of(cfg)
    changed = page[page.index("## What changed") : page.index("## See also")]
    bullets = [line for line in changed.splitlines() if line.startswith("- ")]
    assert len(bullets) == 1 and "First check: 13 tracked items read" in bullets[0], changed
    assert "first read" not in page
    with GitHubClient(fake_github.url, token="test-token") as client:  # nothing new
        run_cycle(cfg, client=client, no_smoke=True)
    assert page_of(cfg).count("First check") == 1


def test_a_bad_token_before_the_first_read_is_one_not_checked_yet_state(tmp_path, fake_github):
    from watcher.github.client import GitHubClient
    from watcher.publish.site import build_site

    cfg = make_config(tmp_path)
    fake_github.fail("GET", r".*", status=401, times=-1, body={"message": "Bad credentials"})
    with GitHubClient(fake_github.url, token="bad", retries=0) as client:
        report = run_cycle(cfg, client=client, no_smoke=True)
    page = page_of(cfg)
    assert page.startswith("# SGLang — not checked yet")
    assert "**Status: not checked yet**. GitHub did not accept the token on the first check" in page
    assert "could not reach" not in page and "❌" not in page
    assert "Last read from GitHub: not yet." in page
    assert "First check" not in page and "## What changed" not in page
    assert report.status["pages"][0]["not_checked_yet"].startswith(
        "GitHub did not accept the token"
    )
    build_site(cfg)
    index = (cfg.site_dir / "index.html").read_text()
    assert "Checks have stopped" not in index
    assert "Not checked yet: GitHub did not accept the token" in index


def test_the_sticky_comment_carries_the_maintainer_warnings(seeded):
    from watcher.judge.evaluate import evaluate
    from watcher.notify.plan import Bodies

    cfg, last = seeded
    store = Store(cfg.db_path)
    try:
        row = store.items()["sglang-marlin"]
        details = dict(row.get("details") or {})
        details["warnings"] = ["`old/path.cu` no longer exists at main (abc1234)"]
        store.upsert_item(dict(row, details=details))
        items, runs, statuses = store.items(), store.smoke_runs(), store.statuses()
    finally:
        store.close()
    ev = evaluate(cfg, items, runs, statuses, last)
    body = Bodies(cfg, ev, items, runs, statuses).status(cfg.pages[0])
    assert "**Needs a maintainer**" in body
    assert "- sglang-marlin: `old/path.cu` no longer exists at main (abc1234)" in body
