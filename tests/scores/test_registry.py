"""The score registry: every consumer of a score name reads it."""

from __future__ import annotations

import typing

import numpy as np
import pytest
from click.testing import CliRunner

from bnsl_dist.cache.spec import CacheSpec
from bnsl_dist.data import CategoricalData
from bnsl_dist.exceptions import InvalidConfigError
from bnsl_dist.scores import LocalScorer, ScoreInfo, register_score, score_info, score_names
from bnsl_dist.scores import registry as reg


def test_names_and_properties():
    assert score_names() == ("bdeu", "bic", "ll")
    assert score_names(structure=True) == ("bdeu", "bic")
    assert [score_info(n).penalty_bound for n in score_names()] == [False, True, False]
    assert [score_info(n).uses_ess for n in score_names()] == [True, False, False]
    with pytest.raises(InvalidConfigError, match="unknown score 'aic'; choose from bdeu"):
        score_info("aic")


def test_consumers_take_their_choices_from_the_registry():
    """The cache spec's choices, the CLI's --score choices, LocalScorer's check."""
    assert set(typing.get_args(CacheSpec.model_fields["score"].annotation)) \
        == set(score_names(structure=True))
    from bnsl_dist.cli import main

    for args, names in ((["cache", "build", "--help"], score_names(structure=True)),
                        (["score", "--help"], score_names())):
        out = CliRunner().invoke(main, args).output
        assert "[" + "|".join(names) + "]" in out, out
    d = CategoricalData.from_array(np.array([[0, 1], [1, 1]]))
    with pytest.raises(InvalidConfigError, match="unknown score"):
        LocalScorer(d, "aic")
    with pytest.raises(ValueError, match="'bdeu' or 'bic'"):
        CacheSpec(score="ll")  # the log-likelihood cannot rank parent sets


def test_a_name_or_kind_registered_twice_is_an_error(monkeypatch):
    monkeypatch.setattr(reg, "_SCORES", dict(reg._SCORES))
    with pytest.raises(ValueError, match="clashes"):
        register_score(ScoreInfo("bic2", score_info("bic").kind, "x", structure=True))
    with pytest.raises(ValueError, match="clashes"):
        register_score(ScoreInfo("bic", 99, "x", structure=True))
    register_score(score_info("bic"))  # the same entry again: no change
