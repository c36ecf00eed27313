"""What it means: the state words, blocker and page statuses as a pure function of stored data, a
recipe's speed against its baseline, one view of a stored row, the evidence chain behind a status,
and whether checks have stopped (one freshness rule).

May import: core, config, store.
"""
