"""Every format the advisor writes: sysctl.conf, Markdown, JSON, tuned, Ansible, diff tables,
check reports (text, JSON, GitHub, SARIF), fleet summaries and output directories, facts files,
explanations, the progress display, and the JSON schemas of the contracts.

Formats results, computes nothing new. Imports `engine`, `knowledge` and `model`.
"""
