"""What readers see: the page context both the Markdown pages and the site render from, `status.json`,
the static site, the recipes x rigs matrix, and the reader sentences (prose).

May import: core, config, store, judge, smoke, bisect.
"""
