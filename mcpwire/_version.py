"""The package version (the only place it is written)."""

__all__ = ("__version__",)

__version__ = "0.1.0"
