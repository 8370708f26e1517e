"""A cell's task, one module per kind beside the cell's union of them
(:data:`bnsl_dist.pipeline.cell.Task`): :mod:`~bnsl_dist.pipeline.tasks.within` (the
time-limited learn: its spec, ``run(task, data, cache, rng)`` and typed result)."""
