"""`python -m watcher` runs the same CLI as the `watcher` console script."""

from watcher.cli import main

if __name__ == "__main__":
    main()
