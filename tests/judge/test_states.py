"""What a state word means for a blocker: the one rule the pure evaluator reads from `states`."""

from __future__ import annotations

import pytest

from watcher.config.model import Item
from watcher.judge.states import item_satisfied

PULL = Item(id="p", repo="o/r", kind="pull", number=1)
PULL_IN_RELEASE = Item(id="pr", repo="o/r", kind="pull", number=2, require_release=True)
ISSUE = Item(id="i", repo="o/r", kind="issue", number=3)
COMMITS = Item(id="c", repo="o/r", kind="commits", pattern="fix")
RELEASES = Item(id="r", repo="o/r", kind="releases")


@pytest.mark.parametrize(
    "item, row, satisfied",
    [
        (PULL, None, False),  # never read: nothing counts
        (PULL, {"state": None}, False),
        (PULL, {"state": "open"}, False),
        (PULL, {"state": "draft"}, False),
        (PULL, {"state": "merged"}, True),
        (PULL, {"state": "closed"}, False),  # closed is not fixed
        (PULL, {"state": "closed", "superseded_state": "open"}, False),
        (PULL, {"state": "closed", "superseded_state": "merged"}, True),
        (PULL_IN_RELEASE, {"state": "merged"}, False),  # merged but in no release yet
        (PULL_IN_RELEASE, {"state": "merged", "in_release": "v1.2.0"}, True),
        (
            PULL_IN_RELEASE,
            {"state": "closed", "superseded_state": "merged", "in_release": "v1"},
            True,
        ),
        (ISSUE, {"state": "completed"}, True),
        (ISSUE, {"state": "not_planned"}, False),
        (ISSUE, {"state": "closed"}, False),
        (ISSUE, {"state": "open"}, False),
        (COMMITS, {"state": "matched"}, True),
        (COMMITS, {"state": "no-match"}, False),
        (RELEASES, {"state": "v0.5.0"}, True),
        (RELEASES, {"state": "none"}, False),
    ],
)
def test_item_satisfied(item, row, satisfied):
    assert item_satisfied(item, row) is satisfied
