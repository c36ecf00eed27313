"""Stand-ins for the outside world: a fake GitHub, a fake inference engine, seeded scenarios.

Used by the tests, the benches and `watcher demo`. No product module imports this package
(only `watcher/onboard/demo.py` does; a test checks), so the watcher never depends on its own doubles.
"""
