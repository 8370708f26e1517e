"""`bnsl-dist score`: score a DAG on a data set."""

from __future__ import annotations

import click

from bnsl_dist.cli._common import echo_json
from bnsl_dist.scores.registry import score_names


@click.command("score")
@click.argument("data")
@click.option("--dag", "dag_path", required=True, type=click.Path(exists=True, dir_okay=False),
              help="DAG JSON: {\"nodes\": [...], \"parents\": {name: [...]}}, naming every "
                   "variable of DATA, or the result of `bnsl-dist learn`.")
@click.option("--allow-partial-dag", "partial", is_flag=True,
              help="Accept a DAG JSON that leaves variables out; they are scored without "
                   "parents.")
@click.option("--score", "score", type=click.Choice(score_names()), default="bic",
              show_default=True)
@click.option("--ess", type=click.FloatRange(min=0, min_open=True), default=1.0,
              show_default=True, help="Equivalent sample size of BDeu.")
def score_cmd(data: str, dag_path: str, partial: bool, score: str, ess: float) -> None:
    """Score the DAG of --dag on DATA (a file, or a name from `bnsl-dist data list`);
    print {"total", "per_variable"} as JSON."""
    from bnsl_dist.cli._inputs import load_data
    from bnsl_dist.graph import DAG
    from bnsl_dist.scores import LocalScorer

    d = load_data(data)
    dag = DAG.read_json(dag_path, names=d.names, partial=partial)
    scorer = LocalScorer(d, score, ess)
    per = scorer.score_parents(dag.parents)
    echo_json({"score": score, "total": float(per.sum()),
               "per_variable": {d.names[i]: float(s) for i, s in enumerate(per)}})
