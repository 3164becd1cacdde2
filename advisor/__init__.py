"""sysctl-advisor: Linux network and memory sysctls computed from host facts, with reasons."""

__version__ = "0.1.0"
