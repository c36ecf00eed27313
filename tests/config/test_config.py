"""Config parsing: every error names the file, the table and the key, and exits 2 from the CLI."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from kits.watchtoml import load_watch

from watcher.config.load import load_config, parse_config
from watcher.config.reader import parse_duration
from watcher.core.errors import ConfigError

REPO = Path(__file__).resolve().parents[2]

MINIMAL = """
[[item]]
id = "pr"
repo = "o/r"
kind = "pull"
number = 1

[[blocker]]
id = "b"
title = "B"
items = ["pr"]
"""


def parse(text: str, tmp_path: Path):
    return load_watch(tmp_path, text)


def error_of(text: str, tmp_path: Path) -> str:
    with pytest.raises(ConfigError) as e:
        parse(text, tmp_path)
    return str(e.value)


def test_default_watch_list_is_valid():
    cfg = load_config(REPO / "watch.toml")
    assert {i.id for i in cfg.items} >= {
        "vllm-40361",
        "vllm-39931",
        "vllm-40124",
        "fla-rollback",
        "sglang-marlin",
        "sglang-gdn",
        "sglang-releases",
        "sglang-autoround-mapping",
        "sglang-marlin-guard",
        "sglang-gdn-spec-state",
        "sglang-qwen35-eagle3",
        "sglang-offloader-tied-weights",
    }
    assert [b.id for b in cfg.blockers] == [
        "marlin-pad",
        "deltanet-rollback",
        "eagle3-layer-capture",
        "offloader-tied-weights",
    ]
    marlin, gdn = cfg.blocker("marlin-pad"), cfg.blocker("deltanet-rollback")
    assert marlin.rule == "any"
    # A fix in vLLM's own Marlin copy is a hint, never a fix in SGLang.
    assert "vllm-40361" in marlin.hints and "vllm-40361" not in marlin.items
    # Only SGLang's own code clears the GDN blocker; FLA and the vLLM threads are context.
    assert gdn.items == ("sglang-gdn-spec-state",)
    assert {"vllm-39931", "vllm-40124", "fla-rollback"} <= set(gdn.watch)
    assert cfg.item("sglang-marlin-guard").ref == "latest-release"
    eagle, nospec = cfg.recipe("sglang-eagle-tp1"), cfg.recipe("sglang-nospec-tp1")
    assert eagle.spec_decode and "--speculative-algorithm" in eagle.command
    assert "eagle3-layer-capture" in eagle.blockers
    assert not nospec.spec_decode and "--speculative-algorithm" not in nospec.command
    assert nospec.blockers == ("marlin-pad", "offloader-tied-weights")
    # both recipes are TP=1: one 3090 needs the OffloaderV1 fix
    assert "offloader-tied-weights" in eagle.blockers
    assert cfg.page("sglang").output == "docs/engines/SGLANG.md"
    assert cfg.settings.interval == 300


def test_partial_config_is_valid(tmp_path):
    cfg = parse('[[recipe]]\nid = "r"\nengine = "vllm"\ncommand = ["vllm", "serve"]\n', tmp_path)
    assert cfg.recipes[0].ready_path == "/health"
    assert cfg.items == () and cfg.pages == ()
    assert parse("", tmp_path).items == ()


def test_paths_are_relative_to_the_config(tmp_path):
    cfg = parse('[watcher]\ndata_dir = "state"\n', tmp_path)
    assert cfg.data_dir == tmp_path / "state"
    assert cfg.site_dir == tmp_path / "site"


@pytest.mark.parametrize(
    "text, expected",
    [
        (
            '[watcher]\nintervall = "30m"\n',
            "[watcher] key 'intervall': is not a known key (did you mean 'interval'?)",
        ),
        ('[watcher]\nconcurrency = "8"\n', "[watcher] key 'concurrency': must be int, got str '8'"),
        ('[watcher]\ninterval = "soon"\n', "[watcher] key 'interval': not a duration: 'soon'"),
        ('[watcher]\ncycle_timeout = "1 min"\n', "[watcher] key 'cycle_timeout': not a duration"),
        ('[watcher]\ncycle_timeout = "0s"\n', "[watcher] key 'cycle_timeout': must be positive"),
        ("[watcher]\nconcurrency = true\n", "[watcher] key 'concurrency': must be int, got bool"),
        (
            MINIMAL + '[[item]]\nid = "pr"\nrepo = "o/r"\nkind = "issue"\nnumber = 2\n',
            "[item[1]] key 'id': duplicate id 'pr'",
        ),
        (
            MINIMAL.replace('items = ["pr"]', 'items = ["nope"]'),
            "[blocker.b] key 'items': no item with id 'nope'",
        ),
        (
            MINIMAL + '[[page]]\nid = "p"\ntitle = "P"\noutput = "P.md"\nblockers = ["zzz"]\n',
            "[page.p] key 'blockers': no blocker with id 'zzz'",
        ),
        (
            MINIMAL
            + '[[recipe]]\nid = "r"\nengine = "sglang"\ncommand = ["x"]\nblockers = ["missing"]\n',
            "[recipe.r] key 'blockers': no blocker with id 'missing'",
        ),
        (
            MINIMAL.replace('items = ["pr"]', 'items = ["pr"]\nsignatures = ["no-such-sig"]'),
            "[blocker.b] key 'signatures': no signature with id 'no-such-sig'",
        ),
        (
            '[[item]]\nid = "x"\nrepo = "o/r"\nkind = "pull"\n',
            "[item[0]] key 'number': is required for kind 'pull'",
        ),
        (
            '[[item]]\nid = "x"\nrepo = "o/r"\nkind = "thread"\n',
            "[item[0]] key 'kind': must be one of issue, pull, commits, releases",
        ),
        (
            '[[item]]\nid = "x"\nrepo = "nope"\nkind = "releases"\n',
            "[item[0]] key 'repo': must be 'owner/name'",
        ),
        (
            '[[item]]\nid = "x"\nrepo = "o/r"\nkind = "commits"\npattern = "(unclosed"\n',
            "[item[0]] key 'pattern': is not a valid regular expression",
        ),
        (
            '[[item]]\nid = "x"\nrepo = "o/r"\nkind = "issue"\nnumber = 1\npaths = ["a/"]\n',
            "[item[0]] key 'paths': applies only to kind 'commits'",
        ),
        ('[[item]]\nid = "Bad Id"\nrepo = "o/r"\nkind = "releases"\n', "[item[0]] key 'id':"),
        (
            '[[recipe]]\nid = "r"\nengine = "sglang"\ncommand = "python -m sglang.launch_server"\n',
            "[recipe[0]] key 'command': must be list",
        ),
        (
            '[[recipe]]\nid = "r"\nengine = "sglang"\ncommand = []\n',
            "[recipe[0]] key 'command': must be a non-empty list",
        ),
        (
            '[[recipe]]\nid = "r"\nengine = "sglang"\ncommand = ["x"]\n[recipe.hardware]\ngpu = "3090"\n',
            "[recipe[0].hardware] key 'gpu': is not a known key",
        ),
        (
            '[[recipe]]\nid = "r"\nengine = "tgi"\ncommand = ["x"]\n',
            "[recipe[0]] key 'engine': must be one of sglang, vllm, llama.cpp, ik_llama.cpp, beellama, llamacpp-club3090, vllm-omni, vllm-lmcache, other",
        ),
        ("[notify]\nenabled = true\n", "[notify] key 'repo': is required when enabled = true"),
        (
            '[smoke]\nbackend = "github-actions"\n',
            "[smoke] key 'repo': is required when backend = 'github-actions'",
        ),
        ('[[page]]\nid = "p"\ntitle = "P"\n', "[page[0]] key 'output': is required"),
        (
            '[[page]]\nid = "p"\ntitle = "P"\noutput = "x"\n[page.park]\nreason = "r"\nuntil = "someday"\n',
            "[page[0].park] key 'until': must be a date",
        ),
        (
            '[[blocker]]\nid = "b"\ntitle = "B"\n[blocker.override]\nstatus = "fixed"\nreason = "r"\n',
            "[blocker[0].override] key 'status': must be one of blocked, fix-merged, verified, reproduces",
        ),
        (  # issue 32 L3: one trigger could hold the GPU for days
            '[[recipe]]\nid = "r"\nengine = "sglang"\ncommand = ["x"]\n[recipe.checks]\n'
            "repeats = 1000000000\n",
            "[recipe[0].checks] key 'repeats': must be between 1 and 50, got 1000000000",
        ),
        (
            '[[recipe]]\nid = "b"\nengine = "sglang"\ncommand = ["x"]\n'
            '[[recipe]]\nid = "r"\nengine = "sglang"\ncommand = ["x"]\nbaseline = "b"\n'
            "compare_rounds = 100000\n",
            "key 'compare_rounds': must be between 1 and 10, got 100000",
        ),
        (  # issue 32 L6: what `init --github` refuses for the workflow, validate refuses
            '[watcher]\ndata_dir = "my data"\n',
            "[watcher] key 'data_dir': 'my data' cannot go into the workflows",
        ),
        ('[watcher]\ndata_dir = "d$(id)"\n', "[watcher] key 'data_dir': 'd$(id)' cannot go"),
        ("[pages]\n", "top-level table 'pages' is not known (did you mean 'page'?)"),
        ("[watcher\n", "not valid TOML"),
        ('item = "x"\n', "[[item]] must be an array of tables"),
    ],
)
def test_config_errors_name_file_table_and_key(tmp_path, text, expected):
    message = error_of(text, tmp_path)
    assert str(tmp_path / "watch.toml") in message
    assert expected in message


def test_missing_file_says_how_to_make_one(tmp_path):
    with pytest.raises(ConfigError, match="run `watcher init`"):
        load_config(tmp_path / "nope.toml")


def test_cycle_timeout_defaults_to_ten_request_timeouts_and_at_least_a_minute(tmp_path):
    from watcher.loop.cycle import poll_deadline

    assert poll_deadline(parse("[watcher]\n", tmp_path).settings) == 200
    assert poll_deadline(parse('[watcher]\ntimeout = "2s"\n', tmp_path).settings) == 60
    assert poll_deadline(parse('[watcher]\ncycle_timeout = "90s"\n', tmp_path).settings) == 90


def test_durations():
    assert parse_duration("30m") == 1800
    assert parse_duration("90s") == 90
    assert parse_duration("14d") == 14 * 86400
    assert parse_duration(5) == 5
    with pytest.raises(ValueError):
        parse_duration("5 minutes")


def test_snooze_override_park_parse(tmp_path):
    cfg = parse(
        MINIMAL.replace(
            "number = 1", 'number = 1\n[item.snooze]\nuntil = 2026-12-24\nreason = "holidays"'
        )
        + '[blocker.override]\nstatus = "verified"\nreason = "by hand"\nuntil = "2027-01-01"\n'
        + '[[page]]\nid = "p"\ntitle = "P"\noutput = "P.md"\n[page.park]\nreason = "waiting"\n',
        tmp_path,
    )
    assert cfg.item("pr").snooze.until.isoformat() == "2026-12-24"
    assert cfg.blocker("b").override.status == "verified"
    assert cfg.page("p").park.until is None


def test_validate_cli_exit_codes(tmp_path):
    bad = tmp_path / "watch.toml"
    bad.write_text("[watcher]\nbogus = 1\n")
    env = {"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"}
    r = subprocess.run(
        [sys.executable, "-m", "watcher", "validate", "--config", str(bad)],
        capture_output=True,
        text=True,
        env=env,
    )
    assert r.returncode == 2
    assert "[watcher] key 'bogus'" in r.stderr and str(bad) in r.stderr
    assert "Traceback" not in r.stderr
    r = subprocess.run(
        [sys.executable, "-m", "watcher", "validate", "--config", str(REPO / "watch.toml")],
        capture_output=True,
        text=True,
        env=env,
    )
    assert r.returncode == 0, r.stderr
    assert "13 items, 4 blockers, 5 recipes, 2 pages" in r.stdout


def test_init_writes_default_and_never_overwrites(tmp_path):
    from click.testing import CliRunner

    from watcher.cli import cli

    runner = CliRunner()
    r = runner.invoke(cli, ["init", str(tmp_path / "w")])
    assert r.exit_code == 0, r.output
    written = (tmp_path / "w" / "watch.toml").read_text()
    assert (tmp_path / "w" / "fragments" / "sglang" / "pros.md").exists()
    assert written == (REPO / "watch.toml").read_text()
    r = runner.invoke(cli, ["init", str(tmp_path / "w")])
    assert r.exit_code == 1 and "already exists" in r.output
    assert parse_config(written, tmp_path / "w" / "watch.toml").pages[0].id == "sglang"


# ---------------------------------------------------------------- what a config may point at


def page(output: str, extra: str = "") -> str:
    return MINIMAL + f'[[page]]\nid = "p"\ntitle = "P"\noutput = "{output}"\n{extra}'


@pytest.mark.parametrize(
    ("output", "why"),
    [
        ("../../elsewhere.md", "not a file inside the config's folder"),
        ("/tmp/elsewhere.md", "not a file inside the config's folder"),
        (".", "not a file inside the config's folder"),
        ("watch.toml", "is the config file itself"),
        ("./sub/../watch.toml", "is the config file itself"),
        ("data/watcher.db", "lies in the data folder"),
        ("data", "lies in the data folder"),
        ("site/index.html", "lies in the site folder"),
        ("templates/page.md.j2", "lies in the templates folder"),
        ("fragments/intro.md", "lies in the fragments folder of page p"),
    ],
)
def test_page_output_stays_in_the_config_folder_and_off_what_watcher_keeps(tmp_path, output, why):
    msg = error_of(page(output, 'fragments = "fragments"\n'), tmp_path)
    assert "[page.p] key 'output'" in msg and why in msg, msg


def test_page_output_through_a_symlink_onto_the_database_is_refused(tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "watcher.db").write_bytes(b"SQLite format 3\0")
    (tmp_path / "ENGINE.md").symlink_to(tmp_path / "data" / "watcher.db")
    msg = error_of(page("ENGINE.md"), tmp_path)
    assert "lies in the data folder" in msg


def test_cli_validate_names_the_output_key(tmp_path):
    path = tmp_path / "watch.toml"
    path.write_text(page("../outside.md"))
    out = subprocess.run(
        [sys.executable, "-m", "watcher", "validate", "--config", str(path)],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
        timeout=60,
    )
    assert out.returncode == 2
    assert "[page.p] key 'output'" in out.stderr and "Traceback" not in out.stderr


def test_fragment_symlink_out_of_the_config_folder_is_refused(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    secret = outside / "secret.txt"
    secret.write_text("root:x:0:0")
    base = tmp_path / "cfg"
    (base / "fragments").mkdir(parents=True)
    (base / "fragments" / "intro.md").symlink_to(secret)
    path = base / "watch.toml"
    path.write_text(page("P.md", 'fragments = "fragments"\n'))
    with pytest.raises(ConfigError, match=r"\[page.p\] key 'fragments': .*intro.md: links to"):
        load_config(path)
    (base / "fragments" / "intro.md").unlink()
    (base / "fragments" / "intro.md").mkdir()  # not a regular file either
    with pytest.raises(ConfigError, match="is not a regular file"):
        load_config(path)
    (base / "fragments" / "intro.md").rmdir()
    (base / "fragments" / "intro.md").symlink_to(base / "own.md")  # a link inside is fine
    (base / "own.md").write_text("hello")
    assert load_config(path).pages[0].fragments == "fragments"


def test_fragments_folder_outside_is_refused(tmp_path):
    msg = error_of(page("P.md", 'fragments = "/etc"\n'), tmp_path)
    assert "[page.p] key 'fragments'" in msg and "outside" in msg


def test_template_symlink_out_of_the_config_folder_is_refused(tmp_path):
    (tmp_path / "secret").write_text("root:x:0:0")
    base = tmp_path / "cfg"
    (base / "templates").mkdir(parents=True)
    (base / "templates" / "page.md.j2").symlink_to(tmp_path / "secret")
    path = base / "watch.toml"
    path.write_text(page("P.md"))
    with pytest.raises(ConfigError, match=r"template .*page.md.j2: links to"):
        load_config(path)
    (base / "templates" / "page.md.j2").unlink()
    (base / "templates" / "sub").symlink_to(tmp_path)  # a linked folder that leaves
    with pytest.raises(ConfigError, match=r"template .*sub: links to"):
        load_config(path)
    msg = error_of(page("P.md", 'template = "../secret"\n'), tmp_path)
    assert "[page.p] key 'template'" in msg
