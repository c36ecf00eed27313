"""What changed upstream: the poller and each item's state word, the git reads (refs, tips, heads,
compares), the events feed, moved paths followed, which cross-references to trust, which commits
are relevant, bounded text matching, and rules replayed over history (backtest).

May import: core, config, store, github.
"""
