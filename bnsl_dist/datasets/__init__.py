"""The dataset catalog: registered data sets and networks (``registry/*.yaml``, shipped
with the package), downloaded with checksums or generated from seeded recipes; and the
shared benchmark data, found only through an explicit setting."""

from bnsl_dist.datasets.catalog import (
    catalog_dir,
    data_root,
    fetch,
    load_catalog,
    load_network,
    load_registered,
    shared_data_dir,
)

__all__ = ["catalog_dir", "data_root", "fetch", "load_catalog", "load_network",
           "load_registered", "shared_data_dir"]
