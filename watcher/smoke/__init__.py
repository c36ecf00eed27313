"""A smoke run on target hardware: when a recipe is due (trigger), one run in order and its typed
result, a comparison session (candidates sharing one baseline launch), the argv and compose launchers, port/readiness/HTTP probes, the optional checks, the capped
log, naming a failure, the GPU gate, and the GitHub Actions backend.

May import: core, config, store, github, judge.
"""
