"""watcher: watches upstream blockers and publishes the truth about them."""

__version__ = "0.1.0"
