"""Pure functions from model and knowledge to results: the plan (build_plan), the lint behind
`check`, and the diff of a plan against the configuration in force.

No I/O: files are read by `sources` and results written by `outputs`. Imports `knowledge` and
`model`.
"""
