"""growth-gevent: the growth-figures REST challenge on gevent + falcon + ujson."""

__version__ = "0.1.0"
