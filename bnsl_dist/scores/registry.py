"""The local scores by name: what each is, and what the rest of the project may do with it.

Everything that takes a score name (:class:`~bnsl_dist.scores.local.LocalScorer`, the
cache spec, cache building, the tabu search, ``learn``, the CLI's ``--score`` choices, the
``.jkl`` header) reads this registry, so a new score is its entry here plus its branch in
the counting kernels (:mod:`bnsl_dist.scores._kernels`, keyed by ``kind``).

Examples
--------
>>> score_names()
('bdeu', 'bic', 'll')
>>> score_names(structure=True)
('bdeu', 'bic')
>>> score_info("bic").penalty_bound, score_info("bdeu").uses_ess
(True, True)
"""

from __future__ import annotations

from dataclasses import dataclass

from bnsl_dist.exceptions import InvalidConfigError
from bnsl_dist.scores import _kernels as K

__all__ = ["ScoreInfo", "register_score", "score_info", "score_names"]


@dataclass(frozen=True, slots=True)
class ScoreInfo:
    """A registered local score (docs/ALGORITHMS.md §2).

    Attributes
    ----------
    name : the registry key (``--score``, ``cache.score`` in a grid YAML)
    kind : the counting kernels' id of the score
    description : one line for help texts
    structure : a structure score: it penalises complexity, so parent sets and DAGs can
        be ranked by it (caches, searches); the log-likelihood cannot (a superset never
        scores lower)
    penalty_bound : ``score(X, P) <= -(ln N / 2)(r_X - 1) q(P)`` holds, so the lossless
        bound on supersets of docs/ALGORITHMS.md §3 applies
    uses_ess : the score takes an equivalent sample size (``ess``)
    """

    name: str
    kind: int
    description: str
    structure: bool
    penalty_bound: bool = False
    uses_ess: bool = False


_SCORES: dict[str, ScoreInfo] = {}


def register_score(info: ScoreInfo) -> ScoreInfo:
    """Add ``info`` to the registry (a name registered twice is an error).

    Raises
    ------
    ValueError
        ``info.name`` or ``info.kind`` is taken by another score.
    """
    for other in _SCORES.values():
        if other != info and (other.name == info.name or other.kind == info.kind):
            raise ValueError(f"score {info.name!r} (kind {info.kind}) clashes with "
                             f"{other.name!r} (kind {other.kind})")
    _SCORES[info.name] = info
    return info


def score_info(name: str) -> ScoreInfo:
    """The registered score ``name``.

    Raises
    ------
    InvalidConfigError
        An unknown name (the message lists the known ones).
    """
    try:
        return _SCORES[name]
    except (KeyError, TypeError):
        raise InvalidConfigError(f"unknown score {name!r}; choose from "
                                 f"{', '.join(score_names())}") from None


def score_names(*, structure: bool = False) -> tuple[str, ...]:
    """The registered score names, sorted (``structure=True``: the structure scores)."""
    return tuple(sorted(n for n, s in _SCORES.items() if s.structure or not structure))


register_score(ScoreInfo("ll", K.KIND_LL, "maximum-likelihood log-likelihood",
                         structure=False))
register_score(ScoreInfo("bic", K.KIND_BIC, "BIC: log-likelihood minus (ln N / 2)(r - 1) q",
                         structure=True, penalty_bound=True))
register_score(ScoreInfo("bdeu", K.KIND_BDEU, "BDeu with equivalent sample size ess",
                         structure=True, uses_ess=True))
