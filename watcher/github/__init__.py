"""Talking to GitHub: the HTTP client (origin rule, deadlines, size cap, caching, rate limits), the
shared pacing budget, each answer's shape checked and its text cleaned, and the comments API.

May import: core, config, store.
"""
