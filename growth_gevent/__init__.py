"""growth-gevent: the growth-figures REST challenge on gevent + falcon + ujson."""

from .core.version import __version__

__all__ = ["__version__"]
