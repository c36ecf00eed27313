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
from site_seed import make_config, seed, smoke_doc

from watcher.cycle import run_cycle
from watcher.render import display_command
from watcher.store import Store, iso


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
        r"^# SGLang — blocked for \d+ days? on 4 upstream fixes <!-- volatile -->$", first
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
    from watcher.github import GitHubClient

    cfg = make_config(tmp_path)
    last = seed(cfg)
    fake_github.fail("GET", r".*", status=503, times=-1)
    with GitHubClient(fake_github.url, token="t", retries=0) as client:
        report = run_cycle(cfg, client=client, now=last + timedelta(days=2), no_smoke=True)
    page = page_of(cfg)
    assert "Last read from GitHub: 2026-11-23 12:00 UTC." in page
    assert "The latest check (2026-11-25 14:00 UTC) could not reach GitHub" in page
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
    from watcher.config import load_config

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
    from watcher.prose import headline

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
