"""Benchmark: the serial seconds per unit of work behind ``learn``'s choice of a local
cluster of threads (:func:`bnsl_dist.pipeline.cost.fits_threads`), against its bounds
:data:`~bnsl_dist.pipeline.cost.CACHE_SECONDS_PER_UNIT` (a cache build: per variable x
exact score x sample) and :data:`~bnsl_dist.pipeline.cost.SEARCH_SECONDS_PER_UNIT` (a
search: per seed x iteration x variable**2 x exact score per variable).

For each Twenty Dataset below, the training split's cache is built at ``--scores`` exact
scores per variable (kernels loaded before, on another cache), and every optimizer the
rule admits (registered, neither exact nor scored from the data) runs ``--iterations``
iterations on it, one seed, after a warm-up run; the seconds per unit are written with
the bound each is held to (``within``: the measured cost is at most the bound).

Run: ``python -m workflows.benchmarks.threads_cost [--scores 50 --iterations 200]``;
writes ``out/threads_cost.json``. Needs ``BNSL_SHARED_DATA`` (the Twenty Datasets).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from workflows.benchmarks._common import train_data, write_result

#: (data set, iterations scale): book's 500 variables take ~1 s an iteration.
DATA = (("nltcs", 1.0), ("plants", 0.5), ("book", 0.1))


def _admitted() -> list[str]:
    """The optimizers fits_threads lets run on threads."""
    from bnsl_dist.search.base import optimizer_info, optimizer_names

    return [n for n in optimizer_names() if not optimizer_info(n).exact
            and not getattr(optimizer_info(n).cls, "needs_data", False)]


def main() -> None:
    from bnsl_dist.cache import build_cache
    from bnsl_dist.pipeline.cost import CACHE_SECONDS_PER_UNIT, SEARCH_SECONDS_PER_UNIT
    from bnsl_dist.search.base import Budget, make_optimizer, optimizer_info
    from bnsl_dist.search.warmup import algorithm_spec, warm_up

    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scores", type=int, default=50, help="exact scores per variable")
    ap.add_argument("--iterations", type=int, default=200, help="per run (nltcs; scaled)")
    ap.add_argument("--name", default="threads_cost")
    args = ap.parse_args()
    names = _admitted()

    def k_of(name: str) -> int | None:
        return 2 if optimizer_info(name).takes_k else None

    warm_up(("independence",), [algorithm_spec(n, {}, k_of(n)) for n in names])
    rows = []
    for data_name, scale in DATA:
        d = train_data(data_name)
        n, spv = d.n_vars, args.scores
        t0 = time.perf_counter()
        cache = build_cache(d, method="independence", scores_per_variable=spv)
        cache_s = time.perf_counter() - t0
        per = cache_s / (n * spv * d.n_samples)
        rows.append({"data": data_name, "n_vars": n, "rows": d.n_samples, "stage": "cache",
                     "seconds": round(cache_s, 3), "seconds_per_unit": per,
                     "bound": CACHE_SECONDS_PER_UNIT, "within": per <= CACHE_SECONDS_PER_UNIT})
        print(rows[-1], flush=True)
        its = max(2, int(args.iterations * scale))
        for name in names:
            opt = make_optimizer(name, k_of(name))
            list(opt.run(cache, Budget(max_iterations=1), np.random.default_rng(0)))
            t0 = time.perf_counter()
            list(opt.run(cache, Budget(max_iterations=its), np.random.default_rng(1)))
            s = time.perf_counter() - t0
            per = s / (its * n * n * spv)
            rows.append({"data": data_name, "n_vars": n, "stage": name, "iterations": its,
                         "seconds": round(s, 3), "seconds_per_unit": per,
                         "bound": SEARCH_SECONDS_PER_UNIT,
                         "within": per <= SEARCH_SECONDS_PER_UNIT})
            print(rows[-1], flush=True)
    worst = {stage: max(r["seconds_per_unit"] for r in rows if r["stage"] == stage)
             for stage in dict.fromkeys(r["stage"] for r in rows)}
    print(write_result(args.name, {"settings": vars(args), "rows": rows,
                                   "worst_seconds_per_unit": worst}))


if __name__ == "__main__":
    main()
