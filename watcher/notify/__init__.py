"""What to say on GitHub and whether to post or edit (a pure plan), and the run that posts it through
the comments API.

May import: core, config, store, github, judge, publish.
"""
