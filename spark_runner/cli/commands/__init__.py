"""Plug-in CLI commands: each module defines ``register(app)``."""
