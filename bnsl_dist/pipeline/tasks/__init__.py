"""A cell's task, one module per kind beside the cell's union of them
(:data:`bnsl_dist.pipeline.cell.Task`), each with its spec and ``run(task, data, cache,
rng)`` returning a typed result: :mod:`~bnsl_dist.pipeline.tasks.search` (one optimizer
on the cache), :mod:`~bnsl_dist.pipeline.tasks.inference` (a search, then the inference
study), :mod:`~bnsl_dist.pipeline.tasks.sem` (SEM-kMAX: the impute command's task and
the SEM grid cell's) and :mod:`~bnsl_dist.pipeline.tasks.within` (the time-limited
learn)."""
