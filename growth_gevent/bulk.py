"""Transitional: ``stores/redis.py`` still imports ``let_io_run`` from here. Its home is ``loop.py``;
this module goes once the redis lane's import names ``loop``."""

from .loop import let_io_run

__all__ = ["let_io_run"]
