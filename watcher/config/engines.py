"""[engines]: a page for every engine on the shelf, made from the recipes' engine labels (forks
kept apart), unless a [[page]] already covers that engine; and where the At-a-glance table goes.

An engine is covered by a [[page]] whose recipes are all of that engine, or whose output is the
file the engine's page would be written to. Pages made here are ordinary pages: judged, written,
shown on the site and in status.json like any [[page]], so no output can tell another story.
"""

from __future__ import annotations

import re

from watcher.config.model import EngineSettings, Page, Recipe
from watcher.config.pins import ENGINE_REPOS
from watcher.config.reader import TableReader

# The guide's own names and file names for its engines; any other label gets a derived one.
TITLES = {
    "vllm": "vLLM",
    "sglang": "SGLang",
    "llama.cpp": "llama.cpp",
    "ik_llama.cpp": "ik_llama.cpp",
    "llamacpp-club3090": "llamacpp-club3090",
    "beellama": "beellama",
    "vllm-omni": "vLLM-Omni",
    "vllm-lmcache": "vLLM + LMCache",
    "other": "Other engines",
}
FILES = {
    "vllm": "VLLM.md",
    "sglang": "SGLANG.md",
    "llama.cpp": "LLAMA_CPP.md",
    "ik_llama.cpp": "IK_LLAMA.md",
    "llamacpp-club3090": "LLAMACPP_CLUB3090.md",
}
# where an engine's upstream lives (the pins' map): its tracker rows are the ones linking there
REPOS = ENGINE_REPOS


def title(engine: str) -> str:
    return TITLES.get(engine, engine)


def file_name(engine: str) -> str:
    return FILES.get(engine) or re.sub(r"[^A-Z0-9]+", "_", engine.upper()).strip("_") + ".md"


def page_id(engine: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", engine.lower()).strip("-") or "engine"


def read_engines(r: TableReader | None) -> EngineSettings | None:
    """[engines]: pages (bool), folder, glance ("" for none), hand (the adopted README)."""
    if r is None:
        return None
    d = EngineSettings()
    folder = r.get("folder", str, d.folder).rstrip("/") or "."
    s = EngineSettings(
        pages=r.get("pages", bool, d.pages),
        folder=folder,
        glance=r.get("glance", str, f"{folder}/README.md"),
        hand=r.get("hand", str),
    )
    if s.hand is not None and s.hand == s.glance:
        r.fail("hand", f"{s.hand!r} is also `glance`: watcher would overwrite the hand-kept copy")
    r.done()
    return s


def covered(page: Page, recipes: dict[str, Recipe]) -> str | None:
    """The engine a [[page]] is about: all its recipes run it (None for a mixed or empty page)."""
    engines = {recipes[r].engine for r in page.recipes if r in recipes}
    return engines.pop() if len(engines) == 1 else None


def engine_pages(
    settings: EngineSettings, pages: tuple[Page, ...], recipes: tuple[Recipe, ...]
) -> tuple[Page, ...]:
    """A page for each engine with recipes that no [[page]] covers, in the recipes' order."""
    if not settings.pages:
        return ()
    by_id = {r.id: r for r in recipes}
    outputs = {page.output.lstrip("./") for page in pages}
    taken = {page.id for page in pages} | {r for r in by_id}
    done = {covered(page, by_id) for page in pages}
    out = []
    for engine in dict.fromkeys(r.engine for r in recipes):
        output = f"{settings.folder}/{file_name(engine)}"
        if engine in done or output.lstrip("./") in outputs:
            continue
        mine = [r for r in recipes if r.engine == engine]
        ident = page_id(engine)
        if ident in taken:
            ident = f"engine-{ident}"
        out.append(
            Page(
                id=ident,
                title=title(engine),
                output=output,
                template="engine.md.j2",
                blockers=tuple(dict.fromkeys(b for r in mine for b in r.blockers)),
                recipes=tuple(r.id for r in mine),
                fragments=f"fragments/{ident}",  # read when it exists; `init --adopt` fills it
                engine=engine,
            )
        )
    return tuple(out)
