"""The size budget of NIR files: every dataset's declared shape checked before ``nir.read`` allocates it.

An HDF5 dataset declares its shape in its header; a chunked, compressed (or never written) dataset of
``2^40`` elements fits in a few hundred bytes of file, and ``nir.read`` would allocate all of it. So the
file's size and the shape of every dataset are checked against :data:`~pondlib.validate.MAX_FILE_BYTES`
and :data:`~pondlib.validate.MAX_ELEMENTS` (per dataset and in all) before anything is read.

Example:
    >>> import pathlib
    >>> here = pathlib.Path(__file__).resolve().parents[3] / "tests" / "data" / "nir" / "lif"
    >>> check_sizes(here / "lif_norse.nir", (OSError,)) > 0
    True
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pondlib.errors import NIRError
from pondlib.validate import MAX_ELEMENTS, check_elements, check_file_size

__all__ = ["check_sizes"]


def check_sizes(path: Path, errors: tuple[type[BaseException], ...]) -> int:
    """The total element count of the datasets of the NIR file ``path``, each and all within the budget.

    Files h5py cannot open or walk (``errors``) are left to ``nir.read``, whose failure names them; 0 then.

    Raises:
        NIRError: the file beyond the byte budget, a dataset or all of them beyond the element budget
            (naming the dataset and its shape).
    """
    import h5py

    check_file_size(path, "NIR file", error=NIRError)
    sizes: list[int] = []

    def visit(name: str, obj: Any) -> None:
        if isinstance(obj, h5py.Dataset):
            shape = tuple(int(d) for d in (obj.shape or ()))
            sizes.append(check_elements(shape, f"dataset {name!r}", where=str(path), error=NIRError))

    try:
        with h5py.File(path, "r") as f:
            f.visititems(visit)
    except NIRError:
        raise
    except errors:
        return 0
    total = sum(sizes)
    if total > MAX_ELEMENTS:
        raise NIRError(
            "NIR file size",
            value=f"{total} elements in {len(sizes)} datasets",
            limit=f"at most {MAX_ELEMENTS} elements in all (the loader's size budget)",
            where=str(path),
            fix="check the file (corrupted or hostile?); nothing was read",
        )
    return total
