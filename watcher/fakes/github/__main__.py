"""`python -m watcher.fakes.github`: the fake GitHub as a command, for trying watcher by hand.

What docs/configuration.md tells a user to point `GITHUB_API_URL` at, without writing Python:
it seeds the named scenarios (watcher/fakes/scenarios/*.json), serves on 127.0.0.1, prints the
two variables to export and serves until interrupted. Fakes are not part of the `watcher`
command (nothing in the product imports them but the demo), so this is a module of its own.

    python -m watcher.fakes.github --seed real_threads --seed sglang_code --port 8765
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from importlib import resources

from watcher.fakes import scenarios
from watcher.fakes.github.server import FakeGitHub

TOKEN = "test-token"  # the one token the fake accepts (its login: watcher-bot)


def scenario_names() -> list[str]:
    folder = resources.files(scenarios.__name__)
    return sorted(
        p.name.removesuffix(".json") for p in folder.iterdir() if p.name.endswith(".json")
    )


def main(argv: list[str] | None = None) -> int:
    names = scenario_names()
    ap = argparse.ArgumentParser(
        prog="python -m watcher.fakes.github", description=__doc__.splitlines()[0]
    )
    ap.add_argument(
        "--seed",
        action="append",
        default=[],
        choices=names,
        help="a scenario to load, in order (repeatable); none: an empty GitHub",
    )
    ap.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: any free one)")
    args = ap.parse_args(argv)
    gh = FakeGitHub(port=args.port)
    for name in args.seed:
        scenarios.load(gh, name)
    try:
        gh.start()
    except OSError as e:
        print(f"error: cannot serve on 127.0.0.1:{args.port}: {e.strerror or e}", file=sys.stderr)
        return 1
    print(f"export GITHUB_API_URL={gh.url} GITHUB_TOKEN={TOKEN}", flush=True)
    seeded = ", ".join(args.seed) or "nothing"
    print(
        f"fake GitHub on {gh.url} (seeded: {seeded}); Ctrl-C stops it", file=sys.stderr, flush=True
    )
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    try:
        done.wait()
    except KeyboardInterrupt:
        pass
    finally:
        gh.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
