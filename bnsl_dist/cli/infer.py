"""`bnsl-dist infer` (P(e), posterior marginals, MPE) and `bnsl-dist loglik`."""

from __future__ import annotations

import math
from typing import Any

import click

from bnsl_dist.cli._common import FiniteRange, echo_json
from bnsl_dist.cli._inputs import load_network_arg

__all__ = ["infer_cmd", "loglik_cmd"]


def _num(x: float) -> float | None:
    return None if math.isnan(x) else float(x)


_engine_options = [
    click.option("--memory-limit", default=2.0, show_default=True,
                 type=FiniteRange(min=0, min_open=True, scale=2**30,
                                  message="{value} is not a finite number of GiB"),
                 help="GiB the junction tree may take."),
    click.option("--approximate", "fallback", is_flag=True,
                 help="Fall back to likelihood weighting when the junction tree exceeds "
                      "the memory limit (otherwise: an error)."),
    click.option("--samples", type=click.IntRange(min=1), default=100_000, show_default=True,
                 help="Particles of the approximate fallback."),
    click.option("--seconds", type=FiniteRange(min=0, min_open=True), default=None,
                 help="Time limit of the approximate fallback (per query)."),
    click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True,
                 help="Seed of the approximate fallback."),
]


def _with_engine_options(fn: Any) -> Any:
    for opt in reversed(_engine_options):
        fn = opt(fn)
    return fn


def _engine(net: Any, memory_limit: float, fallback: bool, samples: int,
            seconds: float | None, seed: int) -> Any:
    from bnsl_dist.inference import make_engine

    return make_engine(net, memory_limit=int(memory_limit * 2**30),
                       fallback="approximate" if fallback else "error",
                       n_samples=samples, seconds=seconds, rng=seed)


@click.command("infer")
@click.argument("network", type=str)
@click.option("--evidence", "-e", default="", metavar="X=s,Y=t",
              help="Observed states, by label or code.")
@click.option("--query", "-q", "query", multiple=True, metavar="Z",
              help="Variables whose posterior marginal to print (repeat or comma-separate; "
                   "default: every unobserved variable).")
@click.option("--mpe", is_flag=True, help="Also print the most probable explanation.")
@_with_engine_options
def infer_cmd(network: str, evidence: str, query: tuple[str, ...], mpe: bool,
              memory_limit: float, fallback: bool, samples: int, seconds: float | None,
              seed: int) -> None:
    """Posterior marginals, P(evidence) and optionally the MPE of a NETWORK (BIF file or
    network name) given --evidence; prints JSON."""
    from bnsl_dist.inference import as_evidence, parse_assignments

    net = load_network_arg(network)
    ev = as_evidence(net, parse_assignments(evidence))
    eng = _engine(net, memory_limit, fallback, samples, seconds, seed)
    names = [q.strip() for qs in query for q in qs.split(",") if q.strip()]
    if not names:
        names = [net.names[v] for v in range(net.n_vars) if ev[0, v] < 0]
    post = eng.posterior(ev, names)
    logp = float(post.log_prob_evidence[0])
    out: dict[str, Any] = {
        "network": network,
        "exact": bool(eng.exact),
        "evidence": {net.names[v]: net.states[v][int(ev[0, v])]
                     for v in range(net.n_vars) if ev[0, v] >= 0},
        "log_prob_evidence": logp if math.isfinite(logp) else None,
        "prob_evidence": math.exp(logp),
        "marginals": {net.names[v]: {s: _num(p) for s, p in zip(net.states[v], m[0],
                                                                strict=True)}
                      for v, m in post.marginals.items()},
    }
    if getattr(eng, "width", None) is not None:
        out["width"] = int(eng.width)
    if mpe:
        res = eng.mpe(ev)
        lp = float(res.log_prob[0])
        # impossible evidence has no most probable explanation: both null (the
        # engines' assignment is then arbitrary, or -1 codes from likelihood weighting)
        out["mpe"] = {"log_prob": lp if math.isfinite(lp) else None,
                      "assignment": {net.names[v]: net.states[v][int(res.assignment[0, v])]
                                     for v in range(net.n_vars)} if math.isfinite(lp)
                      else None}
    echo_json(out)


@click.command("loglik")
@click.argument("network", type=str)
@click.argument("data", type=str)
@click.option("--missing", type=click.Choice(["mask", "error"]), default="mask",
              show_default=True,
              help="Missing cells (?, empty, NA): count rows with ln P(observed cells), or "
                   "fail.")
@_with_engine_options
def loglik_cmd(network: str, data: str, missing: str, memory_limit: float, fallback: bool,
               samples: int, seconds: float | None, seed: int) -> None:
    """Log-likelihood of DATA (a file, or a dataset from `bnsl-dist data list`) under
    NETWORK (a BIF file or a network name): {"total", "mean", "n_rows"} as JSON. Rows with
    missing cells (?, empty, NA) count with ln P(observed cells)."""
    from bnsl_dist.cli._inputs import load_data
    from bnsl_dist.inference import align_data, log_likelihood

    net = load_network_arg(network)
    d = load_data(data, missing=missing,  # type: ignore[arg-type]
                  hint="--missing mask accepts them", observed=False)
    engine = None
    if d.missing is not None:
        align_data(net, d)  # report data errors before building anything
        engine = _engine(net, memory_limit, fallback, samples, seconds, seed)
    res = log_likelihood(net, d, engine=engine)
    out: dict[str, Any] = dict(res.to_json_dict())
    out.update({"network": network, "data": data,
                "n_missing_rows": 0 if d.missing is None else int(d.missing.any(axis=1).sum())})
    echo_json(out)
