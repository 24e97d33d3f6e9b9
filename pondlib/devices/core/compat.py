"""What every chip's adapter for another framework's call styles shares (see :mod:`pondlib.compat`).

Example:
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     warnings.warn("biases dropped", DRCWarning)
    >>> caught[0].category.__name__
    'DRCWarning'
"""

from __future__ import annotations

__all__ = ["DRCWarning"]


class DRCWarning(UserWarning):
    """Rockpool's design-rule warning: a soft limit (e.g. weight biases the chip cannot hold, dropped)
    that Rockpool's mapper warns about where pondlib's own mapper raises unless told what to drop."""
