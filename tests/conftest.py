"""Suite-wide settings.

Hypothesis runs derandomized: every run draws the same examples (seeded from each test's name), so a
red CI run can be reproduced exactly and a green one is not a matter of luck. To explore new examples
locally, run ``HYPOTHESIS_PROFILE=explore pytest``.
"""

from __future__ import annotations

import os

from hypothesis import settings

settings.register_profile("ci", derandomize=True, print_blob=True)
settings.register_profile("explore", derandomize=False, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
