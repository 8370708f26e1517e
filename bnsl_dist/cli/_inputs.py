"""What the commands read from their arguments: DATA (a file, a URL or a registered
name, checked as every command checks it) and a network (a BIF file or a registered
name). Shared by the commands, so that no command imports another."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from bnsl_dist.data import CategoricalData

__all__ = ["COMPLETE_DATA_HINT", "load_data", "load_network_arg"]

#: What a scoring command says after a missing value.
COMPLETE_DATA_HINT = "scores need complete data: `bnsl-dist impute` completes it"


def load_data(spec: str, *, missing: Literal["error", "mask"] = "error",
              hint: str = COMPLETE_DATA_HINT, observed: bool = True) -> CategoricalData:
    """DATA as every command takes it, resolved as ``learn`` and grids resolve it
    (:func:`bnsl_dist.pipeline.run.load_data` of ``DataRef.parse(spec)``): a file, a
    URL (read with fsspec), a bundled data set (``nltcs``, ``nltcs/test``, ``wine``, ``child-5000``), any dataset
    ``bnsl-dist data list`` shows, as ``NAME[/SPLIT]`` (default split: train), or a
    shared Twenty Datasets copy.

    A missing value where ``missing="error"`` fails with ``hint`` appended (what the
    command's user can do about it). With ``observed`` (commands that take the states
    from the data), a column without any observed value is an error naming it.
    """
    import numpy as np

    from bnsl_dist.exceptions import DataError, MissingValueError
    from bnsl_dist.pipeline.run import load_data as load_ref
    from bnsl_dist.pipeline.specs import DataRef

    ref = DataRef.parse(spec, missing)
    ref.check()
    try:
        d = load_ref(ref)
    except MissingValueError as exc:
        exc.args = (f"{exc} ({hint})",)
        raise
    if observed and d.missing is not None and d.missing.all(axis=0).any():
        j = int(np.argmax(d.missing.all(axis=0)))
        raise DataError("no observed value in this column", path=d.source,
                        column=f"{j + 1} ({d.names[j]})")
    return d


def load_network_arg(spec: str) -> Any:
    """A BIF file, or a network name from `bnsl-dist data list` (asia, alarm, r0, ...)."""
    from bnsl_dist.datasets.catalog import load_catalog, load_network
    from bnsl_dist.exceptions import DataError
    from bnsl_dist.model.bif import read_bif

    if Path(spec).exists():
        return read_bif(spec)
    if spec in load_catalog().networks:
        return load_network(spec)
    raise DataError(f"{spec}: no such file, and not a registered network "
                    "(see `bnsl-dist data list`)")
