"""The package version: the single source setup.cfg reads."""

__version__ = "0.1.0"
