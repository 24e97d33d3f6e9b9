"""The version of pondlib (one place; ``pondlib.__version__`` re-exports it)."""

__version__ = "0.1.0"
