"""watch.toml -> typed, validated objects: the file read, each table parsed, references between
tables and the files pages write and read checked.

Every error names the file, the table and the key, so a maintainer can fix it without reading code.
Unknown keys are errors (a typo must not silently disable a blocker). Paths inside a config are
relative to the config file's folder.
"""

from __future__ import annotations

import tomllib
from dataclasses import replace
from functools import partial
from pathlib import Path

from watcher.config.engines import engine_pages, read_engines
from watcher.config.model import Config, Page
from watcher.config.reader import TableReader, did_you_mean
from watcher.config.recipes import read_recipe
from watcher.config.signatures import BUILTIN_IDS
from watcher.config.tables import (
    read_bisect,
    read_blocker,
    read_item,
    read_notify,
    read_page,
    read_settings,
    read_signature,
    read_site,
    read_smoke,
    read_tracker,
)
from watcher.core.errors import ConfigError


def _array(file: Path, data: dict, key: str, parse) -> tuple:
    value = data.get(key, [])
    if not isinstance(value, list):
        raise ConfigError(f"{file}: [[{key}]] must be an array of tables (write [[{key}]])")
    out = []
    seen: set[str] = set()
    for i, table in enumerate(value):
        reader = TableReader(file, f"{key}[{i}]", table)
        obj = parse(reader)
        if obj.id in seen:
            reader.fail("id", f"duplicate id {obj.id!r}")
        seen.add(obj.id)
        reader.where = f"{key}.{obj.id}"
        out.append(obj)
    return tuple(out)


TOP_LEVEL = (
    "watcher",
    "item",
    "blocker",
    "recipe",
    "page",
    "signature",
    "smoke",
    "notify",
    "site",
    "bisect",
    "tracker",
    "engines",
)


def parse_config(text: str, path: Path) -> Config:
    """Parse and check a config text; `path` is used for errors and to resolve relative paths."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{path}: not valid TOML: {e}") from None
    except RecursionError:
        raise ConfigError(f"{path}: arrays or tables are nested too deeply to read") from None
    unknown = sorted(set(data) - set(TOP_LEVEL))
    if unknown:
        raise ConfigError(
            f"{path}: top-level table '{unknown[0]}' is not known{did_you_mean(unknown[0], set(TOP_LEVEL))}"
        )

    def table(key):
        return TableReader(path, key, data[key]) if key in data else None

    cfg = Config(
        path=path.resolve(),
        settings=read_settings(table("watcher")),
        items=_array(path, data, "item", read_item),
        blockers=_array(path, data, "blocker", read_blocker),
        recipes=_array(path, data, "recipe", partial(read_recipe, baselines=_baselines(data))),
        pages=_array(path, data, "page", read_page),
        signatures=_array(path, data, "signature", read_signature),
        smoke=read_smoke(table("smoke")),
        notify=read_notify(table("notify")),
        site=read_site(table("site")),
        bisect=read_bisect(table("bisect")),
        tracker=read_tracker(table("tracker")),
        engines=read_engines(table("engines")),
    )
    if cfg.engines is not None:  # a page for each engine no [[page]] covers: pages like any other
        more = engine_pages(cfg.engines, cfg.pages, cfg.recipes)
        cfg = replace(cfg, pages=cfg.pages + more)
    _check_references(cfg, path)
    _check_files(cfg, path)
    _check_engines(cfg, path)
    return cfg


def _check_engines(cfg: Config, path: Path) -> None:
    """[engines] glance is written inside the config's folder; its hand copy is a file there."""
    if cfg.engines is None:
        return
    base = cfg.base_dir.resolve()
    glance, hand = cfg.engines.glance, cfg.engines.hand
    if glance:
        out = cfg.resolve(glance).resolve()
        if out == base or not out.is_relative_to(base) or out == cfg.path.resolve():
            raise ConfigError(
                f"{path}: [engines] key 'glance': {glance!r} is not a file inside {base}"
            )
        if any(out == cfg.resolve(p.output).resolve() for p in cfg.pages):
            raise ConfigError(f"{path}: [engines] key 'glance': {glance!r} is also a page's output")
    if hand:
        problem = _unsafe_file(cfg.resolve(hand), base)
        if not cfg.resolve(hand).exists():
            problem = f"does not exist (adopt the guide's copy: watcher init --adopt {glance})"
        if problem:
            raise ConfigError(f"{path}: [engines] key 'hand': {hand!r} {problem}")


def _baselines(data: dict) -> frozenset[str]:
    """The recipe ids named as a baseline (their checks default to a comparison's repeats)."""
    tables = data.get("recipe")
    if not isinstance(tables, list):
        return frozenset()
    named: set[str] = set()
    for t in tables:
        if not isinstance(t, dict):
            continue
        if isinstance(t.get("baseline"), str):
            named.add(t["baseline"])
        if isinstance(t.get("rig_baselines"), list):
            named.update(b for b in t["rig_baselines"] if isinstance(b, str))
    return frozenset(named)


def _check_references(cfg: Config, path: Path) -> None:
    """Dangling references are errors: a blocker naming a missing item would never clear."""
    items = {i.id for i in cfg.items}
    blockers = {b.id for b in cfg.blockers}
    recipes = {r.id for r in cfg.recipes}
    pages = {p.id for p in cfg.pages}
    signatures = set(BUILTIN_IDS) | {s.id for s in cfg.signatures}

    def check(where, key, names, known, what):
        for name in names:
            if name not in known:
                raise ConfigError(f"{path}: [{where}] key '{key}': no {what} with id {name!r}")

    for b in cfg.blockers:
        check(f"blocker.{b.id}", "items", b.items, items, "item")
        check(f"blocker.{b.id}", "watch", b.watch, items, "item")
        check(f"blocker.{b.id}", "hints", b.hints, items, "item")
        both = [i for i in b.hints if i in b.items]
        if both:
            raise ConfigError(
                f"{path}: [blocker.{b.id}] key 'hints': {both[0]!r} is also in 'items'; a hint"
                " never clears the blocker, so an item cannot be both"
            )
        check(f"blocker.{b.id}", "signatures", b.signatures, signatures, "signature")
    for r in cfg.recipes:
        check(f"recipe.{r.id}", "blockers", r.blockers, blockers, "blocker")
        for key, names in (
            ("baseline", (r.baseline,) if r.baseline else ()),
            ("rig_baselines", r.rig_baselines),
        ):
            check(f"recipe.{r.id}", key, names, recipes, "recipe")
            for name in names:
                base = cfg.recipe(name)
                if base.id == r.id or base.baseline:
                    raise ConfigError(
                        f"{path}: [recipe.{r.id}] key '{key}': {base.id!r} must be another"
                        " recipe that has no baseline of its own"
                    )
    for p in cfg.pages:
        check(f"page.{p.id}", "blockers", p.blockers, blockers, "blocker")
        check(f"page.{p.id}", "recipes", p.recipes, recipes, "recipe")
    check("notify", "pages", cfg.notify.pages, pages, "page")


def _check_files(cfg: Config, path: Path) -> None:
    """What watcher writes stays inside the config's folder and off what it must never replace
    (the config, the data and site folders, hand-written text); what it reads as templates and
    fragments is a regular file inside the config's folder (a symlink must not leak /etc/passwd).
    """
    base = cfg.base_dir.resolve()
    templates = base / "templates"
    keep_off = {
        "data folder ([watcher] data_dir)": cfg.data_dir.resolve(),
        "site folder ([watcher] site_dir)": cfg.site_dir.resolve(),
        "templates folder": templates.resolve(),
    }
    for p in cfg.pages:
        if p.fragments:
            keep_off[f"fragments folder of page {p.id}"] = cfg.resolve(p.fragments).resolve()

    def fail(page: Page, key: str, msg: str):
        raise ConfigError(f"{path}: [page.{page.id}] key '{key}': {msg}")

    for p in cfg.pages:
        out = cfg.resolve(p.output).resolve()
        if out == base or not out.is_relative_to(base):
            fail(
                p, "output", f"{p.output!r} is {out}, not a file inside the config's folder {base}"
            )
        if out == cfg.path.resolve():
            fail(p, "output", f"{p.output!r} is the config file itself")
        for what, folder in keep_off.items():
            if out == folder or out.is_relative_to(folder):
                fail(p, "output", f"{p.output!r} lies in the {what} {folder}")
        if out.exists() and not out.is_file():
            fail(p, "output", f"{p.output!r} exists and is not a regular file")
        if Path(p.template).is_absolute() or ".." in Path(p.template).parts:
            fail(p, "template", f"{p.template!r} must be a file name inside templates/")
        if p.fragments:
            folder = cfg.resolve(p.fragments)
            if not folder.resolve().is_relative_to(base):
                fail(p, "fragments", f"{p.fragments!r} is {folder.resolve()}, outside {base}")
            for f in sorted(folder.glob("*.md")) if folder.is_dir() else ():
                problem = _unsafe_file(f, base)
                if problem:
                    fail(p, "fragments", f"{f}: {problem}")
    if templates.is_dir():
        if not templates.resolve().is_relative_to(base):
            raise ConfigError(f"{path}: {templates} links outside the config's folder {base}")
        for f in sorted(templates.rglob("*")):
            problem = None if f.is_dir() and not f.is_symlink() else _unsafe_file(f, base)
            if problem:
                raise ConfigError(f"{path}: template {f}: {problem}")


def _unsafe_file(f: Path, base: Path) -> str | None:
    """Why `f` must not be read as a template or fragment, or None."""
    target = f.resolve()
    if not target.is_relative_to(base):
        return f"links to {target}, outside the config's folder {base}"
    if not target.is_file():
        return "is not a regular file"
    return None


def load_config(path: str | Path) -> Config:
    """Read and parse a config file; a missing file is a ConfigError that says how to make one."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(
            f"{p}: no such config file (looked in {p.absolute().parent}; pass --config PATH, "
            "or run `watcher init` there to write the default one)"
        ) from None
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"{p}: cannot read config: {e}") from None
    return parse_config(text, p)


def default_config_text() -> str:
    """The default watch list, from the wheel if installed, else from the checkout."""
    from importlib import resources

    packaged = resources.files("watcher") / "default_watch.toml"
    if packaged.is_file():
        return packaged.read_text(encoding="utf-8")
    checkout = Path(__file__).resolve().parents[2]  # watcher/config/load.py -> the checkout
    return (checkout / "watch.toml").read_text(encoding="utf-8")
