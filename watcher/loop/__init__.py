"""One check (the cycle reads as a list of stage calls), `serve`'s schedule, and the lock that keeps
cycles from overlapping.

May import every stage before it.
"""
