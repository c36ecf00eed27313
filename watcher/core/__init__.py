"""The small shared pieces every stage may use: one base error, secrets hidden, progress lines, the
token held out of the environment, the clock, one cleaning rule for upstream text, an atomic file
write, and the regex prefilter.

Imports nothing of watcher's.
"""
