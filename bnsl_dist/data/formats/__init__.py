"""File formats besides delimited text, one module each (each registers its reader with
:func:`bnsl_dist.data.readers.register_reader`; all are imported on first lookup)."""
