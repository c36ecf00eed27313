"""The guide's upstream tracker as the watch list: `init --adopt docs/UPSTREAM.md` makes its
issue and pull links items, a cycle writes the audited tracker (every maintainer's line as
written, watcher's column after it, disagreements counted), and re-adopting after the
maintainers add rows adds their items and loses nothing."""

from __future__ import annotations

import re

import pytest
from click.testing import CliRunner
from kits.trackerkit import COMMIT, DISAGREE, DISCUSSION, SEED, TRACKER, V, seed

from watcher.cli import cli
from watcher.config.load import load_config
from watcher.config.tracker import COMPUTED_HEADER, parse_tracker, split_cells, strip_watcher


def guide(tmp_path, gh, output: str | None = None):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "UPSTREAM.md").write_text(TRACKER, encoding="utf-8")
    (tmp_path / "watch.toml").write_text(
        f'[watcher]\ngithub_api_url = "{gh.url}"\n'
        + (f'\n[tracker]\nsource = "docs/UPSTREAM.md"\noutput = "{output}"\n' if output else ""),
        encoding="utf-8",
    )


def invoke(args, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GITHUB_TOKEN", "test-token")
    monkeypatch.delenv("GITHUB_API_URL", raising=False)
    r = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert r.exit_code == 0, r.output
    return r


def cfg_kind(tmp_path, item_id: str) -> str:
    return load_config(tmp_path / "watch.toml").item(item_id).kind


def watched(tmp_path) -> dict[tuple[str, int], str]:
    cfg = load_config(tmp_path / "watch.toml")
    return {(i.repo, i.number): i.id for i in cfg.items}


def test_adopt_makes_every_issue_and_pull_link_an_item_once(tmp_path, monkeypatch, fake_github):
    guide(tmp_path, fake_github)
    r = invoke(["init", "--adopt", "docs/UPSTREAM.md", "."], tmp_path, monkeypatch)
    items = watched(tmp_path)
    want = set(SEED) | {(COMMIT[0], None), DISCUSSION}
    assert set(items) == want  # 45295 and 40124 are linked twice: one item each
    assert items[("vllm-project/vllm", 45295)] == "vllm-45295"
    assert "read 20 rows" in r.stderr and "17 items added" in r.stderr
    assert "2 rows without a GitHub link" in r.stderr
    assert cfg_kind(tmp_path, "sglang-8123") == "discussion"
    cfg = load_config(tmp_path / "watch.toml")
    commit = cfg.item("llama.cpp-a1b2c3d4")
    assert (commit.kind, commit.sha) == ("commit", COMMIT[1])
    assert cfg.tracker.source == "docs/UPSTREAM.md"
    assert cfg.tracker.output == "docs/UPSTREAM.audit.md"
    assert (tmp_path / "docs" / "UPSTREAM.md").read_text(encoding="utf-8") == TRACKER  # only read


def audited_rows(text: str) -> dict[str, str]:
    """First cell -> watcher's cell, for every row of a table with watcher's column."""
    out = {}
    computed = False
    for line in text.splitlines():
        if not line.startswith("|"):
            computed = False
            continue
        cells = [c.text for c in split_cells(line)]
        if cells[-1] == COMPUTED_HEADER:
            computed = True
        elif computed and not cells[0].startswith("---"):
            out[cells[0]] = cells[-1]
    return out


@pytest.mark.parametrize("output", ["docs/UPSTREAM.audit.md", "docs/UPSTREAM.md"])
def test_the_audited_tracker_keeps_every_word_and_marks_each_disagreement(
    tmp_path, monkeypatch, fake_github, output
):
    seed(fake_github)
    guide(tmp_path, fake_github, output)
    invoke(["init", "--adopt", "docs/UPSTREAM.md", "."], tmp_path, monkeypatch)
    r = invoke(["check-now"], tmp_path, monkeypatch)
    assert f"tracker: 20 rows, {len(DISAGREE)} disagree with GitHub — wrote" in r.stdout
    text = (tmp_path / output).read_text(encoding="utf-8")

    # every maintainer's line is there, as written: table rows end with watcher's cell
    out_lines = text.split("\n")
    for line in TRACKER.split("\n"):
        assert any(o == line or o.startswith(line) for o in out_lines), line
    assert strip_watcher(text) == TRACKER.split("\n")  # and reading it back gives the file
    # the pinned images are not a status table: no column added there
    assert "| vLLM | `vllm/vllm-openai` | `v0.27.1` | 2026-08-01 |\n" in text

    rows = audited_rows(text)
    assert len(rows) == 20
    for first, cell in rows.items():
        key = re.match(r"~*\[(#\d+)\]", first)
        if key and f"[{key[1]}]" in DISAGREE:
            claim, github = DISAGREE[f"[{key[1]}]"]
            assert cell.startswith(f"⚠️ **disagrees**: tracker {claim}, GitHub {github}"), cell
        else:
            assert "disagrees" not in cell, (first, cell)
    assert rows["[#45295](" + V + "/pull/45295) — Marlin sub-tile fix, second try"].startswith(
        f"🔵 · [vllm-project/vllm#45295]({V}/pull/45295) merged 2026-06-12"
    )
    assert "closed without merge 2026-06-12" in rows[next(k for k in rows if "#40361" in k)]
    assert "closed as not planned 2026-02-01" in rows[next(k for k in rows if "#14500" in k)]
    assert rows[next(k for k in rows if k.startswith("Long multi-turn"))].startswith(
        "— not trackable"
    )
    asked = rows[next(k for k in rows if "8123" in k)]
    assert asked.startswith("🟡 · [sgl-project/sglang#8123]") and "open, answered" in asked
    landed = rows[next(k for k in rows if "a1b2c3d" in k)]
    assert (
        landed.startswith("🔵 · [ggml-org/llama.cpp@a1b2c3d4e5f6]")
        and "committed 2026-07-09" in landed
    )
    # every link of every tracked row says what the fake GitHub says of it
    for first, cell in rows.items():
        line = next(x for x in TRACKER.split("\n") if x.startswith(f"| {first} |"))
        for m in re.finditer(r"https://github\.com/([\w.-]+/[\w.-]+)/(pull|issues)/(\d+)", line):
            kind, fields = SEED[(m[1], int(m[3]))]
            said = cell.split(f"[{m[1]}#{m[3]}]({m[0]}) ", 1)[1]
            if fields.get("merged"):
                want = f"merged {fields['merged_at'][:10]}"
            elif fields.get("state") == "closed" and kind == "pull":
                want = f"closed without merge {fields['closed_at']}"
            elif fields.get("state_reason") == "not_planned":
                want = f"closed as not planned {fields['closed_at']}"
            elif fields.get("state") == "closed":
                want = f"closed as completed {fields['closed_at']}"
            else:
                want = "open"
            assert said.startswith(want), (first, said, want)
    # the summary counts them
    assert f"**{len(DISAGREE)} disagree**" in text and "20 rows, 18 with a GitHub link" in text

    r = invoke(["check-now", "--dry-run"], tmp_path, monkeypatch)
    said = next(x for x in r.stdout.splitlines() if x.startswith("tracker: "))
    assert said.startswith(f"tracker: {tmp_path / output} would ")  # not change, unless midnight
    assert said.endswith(" (20 rows, 4 disagree)") and "dry run: nothing was written" in r.stdout
    # a second cycle from the generated file (output = source) or the source reads the same
    invoke(["check-now"], tmp_path, monkeypatch)
    again = (tmp_path / output).read_text(encoding="utf-8")
    assert strip_watcher(again) == TRACKER.split("\n")


def test_readopt_after_the_maintainers_add_rows_adds_their_items_and_drops_none(
    tmp_path, monkeypatch, fake_github
):
    seed(fake_github)
    guide(tmp_path, fake_github, "docs/UPSTREAM.md")  # the maintainers edit the audited file
    invoke(["init", "--adopt", "docs/UPSTREAM.md", "."], tmp_path, monkeypatch)
    invoke(["check-now"], tmp_path, monkeypatch)
    before = watched(tmp_path)
    path = tmp_path / "docs" / "UPSTREAM.md"
    generated = path.read_text(encoding="utf-8")
    new_row = f"| [#46001]({V}/issues/46001) — a new thread | 🟡 Open | Newly found. | None yet. |"
    # a maintainer adds a row under the vLLM table's last row, in the generated file
    lines = generated.split("\n")
    at = next(i for i, line in enumerate(lines) if line.startswith("| Long multi-turn"))
    lines.insert(at + 1, new_row)
    path.write_text("\n".join(lines), encoding="utf-8")
    fake_github.add_issue("vllm-project/vllm", 46001, title="new")
    r = invoke(["init", "--adopt", "docs/UPSTREAM.md", "."], tmp_path, monkeypatch)
    assert "1 item added" in r.stderr and "17 already watched" in r.stderr
    after = watched(tmp_path)
    assert set(after) == set(before) | {("vllm-project/vllm", 46001)}
    assert all(after[k] == v for k, v in before.items())
    invoke(["check-now"], tmp_path, monkeypatch)
    final = path.read_text(encoding="utf-8")
    want = TRACKER.split("\n")
    want.insert(want.index(next(x for x in want if x.startswith("| Long multi-turn"))) + 1, new_row)
    assert strip_watcher(final) == want
    row = next(line for line in final.split("\n") if line.startswith(new_row))
    assert row.endswith(" |") and "open" in row[len(new_row) :]
    assert len(parse_tracker(path).rows) == 21


def test_a_file_that_is_neither_page_nor_tracker_is_refused(tmp_path, monkeypatch, fake_github):
    guide(tmp_path, fake_github)
    (tmp_path / "notes.md").write_text("# Notes\n\nNo tables here.\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    r = CliRunner().invoke(cli, ["init", "--adopt", "notes.md", "."])
    assert r.exit_code != 0 and "no [[page]]" in r.output


def test_a_missing_tracker_or_a_foreign_output_is_named_and_nothing_else_fails(
    tmp_path, monkeypatch, fake_github
):
    guide(tmp_path, fake_github, "docs/AUDIT.md")
    (tmp_path / "docs" / "AUDIT.md").write_text("# Someone's own file\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GITHUB_TOKEN", "test-token")
    r = CliRunner().invoke(cli, ["check-now"])
    assert r.exit_code == 1
    assert "docs/AUDIT.md was not written by watcher" in r.output
    assert (tmp_path / "docs" / "AUDIT.md").read_text(encoding="utf-8") == "# Someone's own file\n"
    (tmp_path / "docs" / "UPSTREAM.md").unlink()
    r = CliRunner().invoke(cli, ["check-now"])
    assert r.exit_code == 1
    assert "[tracker] source:" in r.output and "UPSTREAM.md: no such tracker file" in r.output
    assert "status: " in r.output  # the rest of the cycle ran


def test_tracker_without_source_is_a_config_error_naming_the_key(tmp_path, fake_github):
    (tmp_path / "watch.toml").write_text('[tracker]\noutput = "x.md"\n', encoding="utf-8")
    with pytest.raises(Exception, match=r"watch.toml.*tracker.*source.*required"):
        load_config(tmp_path / "watch.toml")
