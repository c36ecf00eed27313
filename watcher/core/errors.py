"""One base exception; the CLI turns any of them into a clear message and an exit code."""


class WatcherError(Exception):
    """Something the user can act on. `exit_code` is what the CLI exits with."""

    exit_code = 1


class ConfigError(WatcherError):
    """The config file is wrong: the message names the file, the table and the key."""

    exit_code = 2


class GitHubError(WatcherError):
    """A GitHub request failed. Never a state: callers mark the item stale instead."""

    def __init__(self, message: str, status: int | None = None, url: str | None = None):
        super().__init__(message)
        self.status = status
        self.url = url
        self.retry_after: float | None = None  # set when GitHub asked us to wait


class LockBusy(WatcherError):
    """Another cycle holds the data folder's lock."""

    exit_code = 75  # EX_TEMPFAIL


class SmokeError(WatcherError):
    """The smoke runner could not even start a run (bad recipe, missing backend)."""
