"""Words a reader reads on the generated SGLang page, against the hand-kept page it replaced.

    python bench/page_words.py

The shipped watch list rendered from the seeded store the reader-page tests use
(tests/kits/site_seed.py), and on day one (one cycle against the fake GitHub seeded with the real
threads and SGLang's code), whole and trimmed to what the hand-kept page covered (its two
blockers, one recipe); words counted as tests/publish/test_reader_page.py counts them (no HTML
comments, no link targets): the whole page, the page without its fenced code (the recipes'
commands), and its watch-list section.
"""

from __future__ import annotations

import re
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

from kits.handkept import HAND_KEPT, hand_kept_subset, reader_words, watch_section  # noqa: E402
from kits.site_seed import seed  # noqa: E402

from watcher.config.load import load_config  # noqa: E402
from watcher.fakes.github import FakeGitHub  # noqa: E402
from watcher.fakes.scenarios import load, real_threads  # noqa: E402
from watcher.github.client import GitHubClient  # noqa: E402
from watcher.loop.cycle import run_cycle  # noqa: E402


def rendered(text: str, where: Path, day_one: bool) -> str:
    where.mkdir(parents=True)
    (where / "watch.toml").write_text(text)
    cfg = load_config(where / "watch.toml")
    if not day_one:
        seed(cfg)
        return cfg.resolve(cfg.pages[0].output).read_text()
    with FakeGitHub() as gh:
        real_threads(gh)
        load(gh, "sglang_code")
        with GitHubClient(gh.url, token="test-token") as client:
            run_cycle(cfg, client=client, no_smoke=True)
    return cfg.resolve(cfg.pages[0].output).read_text()


def main() -> None:
    hand = HAND_KEPT.read_text()
    shipped = (REPO / "watch.toml").read_text()
    pages = {("hand-kept page", ""): hand}
    with tempfile.TemporaryDirectory(prefix="watcher-bench-words-") as tmp:
        for day_one in (False, True):
            how = "day one" if day_one else "seeded"
            for name, text in (
                ("shipped list", shipped),
                ("hand-kept content", hand_kept_subset(shipped)),
            ):
                where = Path(tmp) / f"{name}-{how}".replace(" ", "-")
                pages[name, how] = rendered(text, where, day_one)
    print(f"{'page':<20} {'store':<8} {'words':>6} {'no code':>8} {'watch list':>11}")
    for (name, how), text in pages.items():
        words, watch = len(reader_words(text)), len(reader_words(watch_section(text)))
        prose = len(reader_words(re.sub(r"```.*?```", "", text, flags=re.S)))
        print(f"{name:<20} {how:<8} {words:>6} {prose:>8} {watch:>11}")


if __name__ == "__main__":
    main()
