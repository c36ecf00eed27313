"""Work done once per process: one jinja2 Environment per template folder, config lookups indexed."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from watcher.config.load import load_config, parse_config
from watcher.publish.page import environment, package_templates

REPO = Path(__file__).resolve().parents[2]


def test_one_environment_per_template_folder(tmp_path):
    shutil.copy(REPO / "watch.toml", tmp_path / "watch.toml")
    cfg = load_config(tmp_path / "watch.toml")
    env = environment(cfg)
    assert environment(cfg) is env
    assert environment(load_config(tmp_path / "watch.toml")) is env  # same folders, new Config
    assert environment() is env  # no templates/ beside the config: the packaged folder alone

    (tmp_path / "templates").mkdir()  # an override folder appears: a new search path
    overridden = environment(cfg)
    assert overridden is not env
    assert overridden.loader.searchpath[0] == str(tmp_path / "templates")
    assert environment(cfg) is overridden


def test_an_edited_template_is_reloaded(tmp_path):
    shutil.copy(REPO / "watch.toml", tmp_path / "watch.toml")
    cfg = load_config(tmp_path / "watch.toml")
    (tmp_path / "templates" / "site").mkdir(parents=True)
    badge = tmp_path / "templates" / "site" / "badge.svg.j2"
    badge.write_text("first {{ badge }}", encoding="utf-8")
    env = environment(cfg)
    assert env.get_template("site/badge.svg.j2").render(badge="x") == "first x"

    badge.write_text("second {{ badge }}", encoding="utf-8")
    stat = badge.stat()  # a later mtime even on a coarse clock
    os.utime(badge, ns=(stat.st_atime_ns, stat.st_mtime_ns + 2_000_000_000))
    assert environment(cfg) is env
    assert env.get_template("site/badge.svg.j2").render(badge="x") == "second x"
    # a packaged template is still found behind the override folder
    assert env.get_template("site/feed.xml.j2").filename.startswith(str(package_templates()))


def test_config_lookups_use_one_index():
    items = "".join(
        f'[[item]]\nid = "i{n}"\nrepo = "o/r"\nkind = "issue"\nnumber = {n}\n\n'
        for n in range(1, 301)
    )
    cfg = parse_config(items, Path("/nowhere/watch.toml"))
    assert cfg.item("i1") is cfg.items[0] and cfg.item("i300") is cfg.items[-1]
    index = cfg._ids["items"]
    assert cfg._ids["items"] is index  # built once, not per lookup
    assert [cfg.item(i.id) for i in cfg.items] == list(cfg.items)
    try:
        cfg.item("missing")
    except KeyError:
        pass
    else:
        raise AssertionError("an unknown id must raise KeyError, as before")
