"""A fake GitHub REST v3 server: real HTTP on 127.0.0.1, GitHub's documented shapes.

Tests and `watcher demo` point the GitHub client at `FakeGitHub().start().url` instead of
https://api.github.com. It is threaded (slow answers overlap), keeps rate-limit accounting,
answers conditional requests with 304, paginates with `Link` headers and can inject faults
(error statuses, timeouts, resets, truncated or malformed bodies, redirects).

Only the standard library is used: it ships in the package and must run offline. The cut
follows moto's: state.py/git.py (the model), shapes*.py (GitHub's JSON), routes/ (requests to
answers, by resource), http.py and server.py (plumbing), faults.py (injected failures).
`tests/fakes/test_fakegithub.py` validates the answers against GitHub's OpenAPI description.
"""

from watcher.fakes.github.faults import FAULT_MODES
from watcher.fakes.github.git import Unknown
from watcher.fakes.github.http import Recorded
from watcher.fakes.github.server import FakeGitHub

__all__ = ["FAULT_MODES", "FakeGitHub", "Recorded", "Unknown"]
