"""sysctl-advisor: Linux network and memory sysctls computed from host facts, with reasons."""

import os

# pydantic scans every installed distribution's entry points for plugins on its first schema
# build (importlib.metadata, email, zipfile: ~10 ms per run). The advisor uses none.
os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")

__version__ = "0.1.0"
