"""Caches that outlive a run: validated files, compiled code; nothing here decides advice."""
