"""The check engine: `pipeline.run` judges what sources.check_inputs read (judge, structural,
listing, values), applies the files' suppression comments (directives), the severities
(selection), the configuration's per-file ignores (per_file) and the baseline (baseline), in
that order."""
