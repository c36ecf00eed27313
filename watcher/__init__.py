"""watcher: watches upstream blockers and publishes the truth about them."""

__version__ = "0.1.0"

# The stages of the loop, in order: a stage imports only from stages before it (each stage's
# __init__ says which), never from a later one; tests/whole/test_import_graph.py holds the code to this.
STAGES = (
    "core",
    "config",
    "store",
    "github",
    "poll",
    "judge",
    "smoke",
    "bisect",
    "publish",
    "notify",
    "loop",
    "onboard",
)
