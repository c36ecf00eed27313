"""The SQLite file: migrations that build and upgrade it; items, events, statuses, smoke runs and page
versions; the comment outbox; pending smoke triggers; bisects and their steps.

May import: core, config.
"""
