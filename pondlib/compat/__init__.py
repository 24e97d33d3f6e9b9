"""Compatibility surfaces: other frameworks' call styles mapped onto pondlib's own objects.

* :mod:`pondlib.compat.rockpool` -- Rockpool's modules, records, graph helpers, error classes and, through
  the device registry, its chip adapters (``pondlib.compat.rockpool.device(name)``).

Nothing here is a second implementation: every call builds or calls a pondlib object.
"""

__all__: list[str] = []
