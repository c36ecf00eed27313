"""The `sglang-gdn` headline on every day of the recorded history: is it relevant to the recipe,
and is it the newest relevant match?

For each day from the rule's `since` to the cut (tests/history, read offline like
bench/rule_precision.py), the commits the rule reads by the end of that day go through
poll.commit_matches and poll.relevance.rank, the poller's own functions. The labels are
tests/poll/test_history_rules.py's: SGLANG_GDN_STRONG (the commit names this recipe's model or a
flag it runs, and is not work it cannot use) and SGLANG_GDN_MATCH (relevant to the guide).
Printed: precision and recall of the rule, and over the days with a match, how often the
headline is strongly relevant, how often it is the newest strongly relevant match, and how
often the page's "newest on <date>" clause is the date of the newest match.

    python bench/headline.py
"""

from __future__ import annotations

import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests" / "poll"))

from rule_precision import measure, read  # noqa: E402
from test_history_rules import SGLANG_GDN_MATCH, SGLANG_GDN_STRONG  # noqa: E402

from watcher.config.load import load_config  # noqa: E402
from watcher.poll import poller as poll  # noqa: E402
from watcher.poll import relevance  # noqa: E402

CUT = datetime(2026, 4, 30, tzinfo=UTC).date()  # the record's cut (docs/backtesting.md)


def as_api(c) -> dict:
    return {"sha": c.sha, "commit": {"message": c.message}, "date": c.committed}


def main() -> None:
    item = load_config(REPO / "watch.toml").item("sglang-gdn")
    commits = read(item)  # newest first
    paths_of = {
        c.sha: [
            p
            for p in item.paths
            if any(f == p.strip("/") or f.startswith(p.strip("/") + "/") for f in c.files)
        ]
        for c in commits
    }
    start = datetime.fromisoformat(item.since.replace("Z", "+00:00")).date()
    cut = CUT
    days = strong = newest_strong = true_clause = 0
    wrong = []
    day = start
    while day <= cut:
        end = datetime(day.year, day.month, day.day, 23, 59, 59, tzinfo=UTC)
        seen = [as_api(c) for c in commits if c.committed <= end]
        matched = [c for c in seen if poll.commit_matches(item, c)]
        day += timedelta(days=1)
        if not matched:
            continue
        days += 1
        ranked = relevance.rank(item, matched, paths_of, frozenset())
        head = ranked[0]["sha"][:10]
        strong_now = [c["sha"][:10] for c in matched if c["sha"][:10] in SGLANG_GDN_STRONG]
        strong += head in SGLANG_GDN_STRONG
        ok = bool(strong_now) and head == strong_now[0]
        newest_strong += ok
        # the page's "newest on" clause: the newest match's date now, the headline's before
        claimed = matched[0] if hasattr(relevance, "tier") else ranked[0]
        true_clause += claimed["date"] == matched[0]["date"]
        if not ok:
            wrong.append(
                f"{day - timedelta(days=1)} {head} {ranked[0]['commit']['message'].splitlines()[0]}"
            )
    m = measure(item)
    print(
        f"precision {m['precision']:.2f}, recall {m['recall']:.2f} ({m['matched']} matched of {m['read']} read, {len(SGLANG_GDN_MATCH)} labelled relevant)"
    )
    print(f"days with a match: {days}")
    print(f"headline strongly relevant: {strong} of {days}")
    print(f"headline is the newest strongly relevant match: {newest_strong} of {days}")
    print(f"'newest on <date>' true: {true_clause} of {days}")
    for w in wrong[:: max(1, len(wrong) // 8)]:
        print("  not the newest strong:", w)


if __name__ == "__main__":
    main()
