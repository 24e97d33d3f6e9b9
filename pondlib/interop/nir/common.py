"""What the NIR reader and writer share: the ``nir`` package itself, the pondlib metadata format
version and the dt conventions.

Example:
    >>> CONVENTIONS["snntorch"], CONVENTIONS["norse"], FORMAT_VERSION
    ('dt_scaled', 'unit', 1)
"""

from __future__ import annotations

from typing import Any

__all__ = ["CONVENTIONS", "FORMAT_VERSION", "RESETS", "nir_package"]

#: Accepted ``convention`` values (aliases name the frameworks).
CONVENTIONS: dict[str, str] = {
    "auto": "auto",
    "pondlib": "pondlib",
    "dt_scaled": "dt_scaled",
    "snntorch": "dt_scaled",
    "lava": "dt_scaled",
    "unit": "unit",
    "norse": "unit",
    "sinabs": "unit",
    "rockpool": "rockpool",
    "spyx": "unknown",
    "unknown": "unknown",
}
#: Reset modes of imported spiking neurons.
RESETS = ("v_reset", "zero", "subtract")
#: Version of the ``pondlib_*`` metadata written by the exporter and read back by the importer.
FORMAT_VERSION = 1


def nir_package() -> Any:
    """The ``nir`` module (a declared dependency; imported where used)."""
    try:
        import nir
    except ImportError as err:  # pragma: no cover - nir is a declared dependency
        raise ImportError("pondlib.interop.nir needs the 'nir' package: pip install nir") from err
    return nir
