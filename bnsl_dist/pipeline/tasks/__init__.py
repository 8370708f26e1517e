"""A cell's task, one module per kind beside the cell's union of them
(:data:`bnsl_dist.pipeline.cell.Task`): :mod:`~bnsl_dist.pipeline.tasks.within` (the
time-limited learn) and :mod:`~bnsl_dist.pipeline.tasks.sem` (SEM-kMAX: the impute
command's task and the SEM grid cell's), each with its spec, ``run(task, data, cache,
rng)`` and typed result. The search and inference tasks' specs are in
:mod:`bnsl_dist.pipeline.cell`; ``run_cell`` runs them."""
