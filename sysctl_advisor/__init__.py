"""sysctl-advisor: Linux network and memory sysctls computed from host facts, with reasons."""

import os
import sys
import types

# pydantic scans every installed distribution's entry points for plugins on its first schema
# build. The advisor uses no pydantic plugin: the variable says so, and the loader module is
# stood in for, because importing it costs importlib.metadata (with email and zipfile, ~10 ms
# per run) even when the variable turns the scan off.
os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
if "pydantic.plugin._loader" not in sys.modules:
    _loader = types.ModuleType("pydantic.plugin._loader")
    _loader.get_plugins = lambda: ()  # type: ignore[attr-defined]
    sys.modules["pydantic.plugin._loader"] = _loader

__version__ = "0.1.0"
