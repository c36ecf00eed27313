"""Getting a guide started: `init --github` scaffolding, the host checklist (doctor), adopting a hand-
kept page, recipes proposed for the guide's compose shelf, the offline demo, and the workflow's
commit decision.

May import every stage before it, and `watcher.fakes` (the demo only).
"""
