"""The package version, in a module of its own: any layer can name it without importing the public
facade (``hebictl/__init__.py``, which sits above every layer because it re-exports all of them)."""

__version__ = "0.1.0"
