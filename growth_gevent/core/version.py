"""The package's version, on the ground floor so that every layer may show it (/metrics' build info)."""

__version__ = "0.1.0"
