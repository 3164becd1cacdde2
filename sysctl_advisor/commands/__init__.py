"""One module per CLI command: a plain function that wires sources -> engine -> outputs and
returns the exit code, callable from tests (and from `fleet`) without typer.

Imports every stage; nothing imports it but the CLI.
"""
