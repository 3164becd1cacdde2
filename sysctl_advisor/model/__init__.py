"""The data every stage shares, validated: host facts, the plan, current configuration, units,
kernel versions and how the kernel reads a written value, errors, and strict YAML/JSON documents.

Imports nothing from the other stages.
"""
