"""`init --adopt docs/engines/README.md`: the guide's At-a-glance page is kept word for word as the
maintainers' copy; each check rebuilds its table from it, every row and all its prose kept."""

from __future__ import annotations

from click.testing import CliRunner
from kits.enginekit import README, config, seed_github, write_guide

from watcher.cli import cli
from watcher.config.load import load_config
from watcher.config.tracker import plain, split_cells

HAND_LINE = 'hand = "fragments/engines-readme.md"\n'


def _guide(tmp_path, gh, engines_table: bool = True):
    """The five-engine guide before adoption: its README in place, no maintainers' copy yet."""
    write_guide(tmp_path, gh.url)
    (tmp_path / "fragments" / "engines-readme.md").unlink()
    (tmp_path / "docs" / "engines" / "README.md").write_text(README, encoding="utf-8")
    text = config(gh.url).replace(HAND_LINE, "")
    if not engines_table:
        text = text.replace("[engines]\n", "")
    (tmp_path / "watch.toml").write_text(text, encoding="utf-8")


def _run(args, tmp_path, monkeypatch, code=0):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GITHUB_TOKEN", "test-token")
    monkeypatch.delenv("GITHUB_API_URL", raising=False)
    r = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert r.exit_code == code, r.output
    return r


def test_adopt_keeps_every_row_and_word_and_the_next_check_rebuilds_the_table(
    tmp_path, monkeypatch, fake_github
):
    seed_github(fake_github)
    _guide(tmp_path, fake_github)
    readme = tmp_path / "docs" / "engines" / "README.md"
    # before: the hand-kept page is never overwritten, and the error says how to adopt it
    r = _run(["check-now"], tmp_path, monkeypatch, code=1)
    assert "watcher init --adopt" in r.output and "README.md" in r.output
    assert readme.read_text(encoding="utf-8") == README

    r = _run(["init", "--adopt", "docs/engines/README.md", "."], tmp_path, monkeypatch)
    assert "(4 rows in its table)" in r.output
    hand = tmp_path / "fragments" / "engines-readme.md"
    assert hand.read_bytes() == README.encode()
    assert load_config(tmp_path / "watch.toml").engines.hand == "fragments/engines-readme.md"
    assert readme.read_text(encoding="utf-8").startswith(README)  # unchanged, marked as ours

    _run(["check-now"], tmp_path, monkeypatch)
    after = readme.read_text(encoding="utf-8")
    # every line of the maintainers' page outside the table is still there, as written
    for line in README.split("\n"):
        if not line.startswith("| **["):
            assert line in after.split("\n"), line
    # every row is kept, and every hand cell is either still there or replaced by evidence
    rows = {plain(ln.split("|")[1]): ln for ln in after.split("\n") if ln.startswith("| **[")}
    assert sorted(rows) == ["ExLlamaV3", "SGLang", "llama.cpp", "vLLM ⭐"]
    assert "| ✅ Full ✋ |" in rows["vLLM ⭐"] and "| 48K safe ✋ |" in rows["vLLM ⭐"]
    for original in (ln for ln in README.split("\n") if ln.startswith("| **[")):
        cells = [c.text for c in split_cells(original)]
        mine = rows[plain(cells[0])]
        kept = sum(c in mine for c in cells[2:])
        assert kept >= 3, (original, mine)  # no smoke run measured these: the hand cells stay
    assert "| blocked on 1 upstream fix · pin `v0.5.12` |" in rows["SGLang"]

    # adopting again changes nothing: the page is watcher's now, the copy is the one to edit
    r = CliRunner().invoke(cli, ["init", "--adopt", "docs/engines/README.md", "."])
    assert r.exit_code == 0 and "already written by watcher; nothing to adopt" in r.output
    readme.write_text(README, encoding="utf-8")  # a hand-kept page again, with a copy adopted
    r = CliRunner().invoke(cli, ["init", "--adopt", "docs/engines/README.md", "."])
    assert r.exit_code != 0
    assert "[engines] key 'hand' already names fragments/engines-readme.md" in r.output
    assert hand.read_bytes() == README.encode()


def test_adopt_adds_the_engines_table_when_there_is_none(tmp_path, monkeypatch, fake_github):
    _guide(tmp_path, fake_github, engines_table=False)
    r = _run(["init", "--adopt", "docs/engines/README.md", "."], tmp_path, monkeypatch)
    assert "added [engines] to watch.toml" in r.output
    cfg = load_config(tmp_path / "watch.toml")
    assert cfg.engines.hand == "fragments/engines-readme.md"
    assert cfg.engines.glance == "docs/engines/README.md"
    assert {p.id for p in cfg.pages} >= {"vllm", "llama-cpp", "ik-llama-cpp", "sglang"}


def test_a_dry_run_says_what_would_change_and_writes_nothing(tmp_path, fake_github):
    from watcher.onboard.adopt_glance import adopt_glance, describe

    _guide(tmp_path, fake_github, engines_table=False)
    before = (tmp_path / "watch.toml").read_bytes()
    readme = tmp_path / "docs" / "engines" / "README.md"
    done = adopt_glance(load_config(tmp_path / "watch.toml"), readme, dry_run=True)
    assert '+hand = "fragments/engines-readme.md"' in done.diff and "+[engines]" in done.diff
    assert describe(done)[0].startswith("dry run: would keep")
    assert (tmp_path / "watch.toml").read_bytes() == before
    assert readme.read_text(encoding="utf-8") == README
    assert not (tmp_path / "fragments" / "engines-readme.md").exists()
