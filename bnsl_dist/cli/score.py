"""`bnsl-dist score`: score a DAG on a data set."""

from __future__ import annotations

import click

from bnsl_dist.cli._common import echo_json, handle_errors


@click.command("score")
@click.argument("data", type=click.Path(dir_okay=False))
@click.option("--dag", "dag_path", required=True, type=click.Path(dir_okay=False),
              help="DAG JSON: {\"nodes\": [...], \"parents\": {name: [...]}}.")
@click.option("--score", "score", type=click.Choice(["bic", "bdeu", "ll"]), default="bic",
              show_default=True)
@click.option("--ess", type=float, default=1.0, show_default=True,
              help="Equivalent sample size of BDeu.")
@handle_errors
def score_cmd(data: str, dag_path: str, score: str, ess: float) -> None:
    """Score the DAG of DAG_PATH on DATA; print {"total", "per_variable"} as JSON."""
    from bnsl_dist.data import resolve_data
    from bnsl_dist.graph import DAG
    from bnsl_dist.scores import LocalScorer

    d = resolve_data(data)
    dag = DAG.read_json(dag_path, names=d.names)
    scorer = LocalScorer(d, score, ess)
    per = scorer.score_parents(dag.parents)
    echo_json({"score": score, "total": float(per.sum()),
               "per_variable": {d.names[i]: float(s) for i, s in enumerate(per)}})
