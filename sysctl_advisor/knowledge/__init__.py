"""What the advisor knows, loaded and compiled: the key catalog, the rules in rules/, the profiles
in profiles/, the check rules in rules/check/, the fleet profile map, the sandboxed expression
language they are written in, and the caches of their compiled forms.

Reads only knowledge files (shipped, or --rules-dir/--profiles-dir). Imports only `model`.
"""
