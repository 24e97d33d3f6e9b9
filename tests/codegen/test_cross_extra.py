"""A missing package of the cross toolchain is refused naming the extra that installs it (``pondlib[cross]``)."""

from __future__ import annotations

import importlib.util

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pondlib.codegen import cross
from pondlib.errors import CodegenError


@settings(max_examples=25, deadline=None)
@given(st.from_regex(r"pondlib_missing_[a-z_]{1,12}", fullmatch=True))
def test_missing_cross_package_names_the_extra(module):
    assert importlib.util.find_spec(module) is None
    with pytest.raises(CodegenError, match=r'pip install "pondlib\[cross\]"') as err:
        cross._require(module)
    assert f"{module} not installed" in str(err.value)


def test_installed_cross_packages_pass():
    for module in ("unicorn", "elftools"):
        if importlib.util.find_spec(module) is not None:
            assert cross._require(module) is None
    assert importlib.util.find_spec("numpy") is not None and cross._require("numpy") is None
