"""Finding the build that fixed or broke a recipe: an engine's published builds between two refs, the
search, its report, and the automatic starts.

May import: core, config, store, github, poll, judge, smoke.
"""
