"""Cumulative-regret policies: EUCBV (Mukherjee et al.) and every baseline it is compared with.

docs/algorithms/regret.md describes them; ``ucb1`` and ``thompson`` (Beta-Bernoulli and
Gaussian prior) are the built-ins of :mod:`armlab.plugins.policies`.
"""

from __future__ import annotations

from armlab.plugins import hookimpl
from armlab.plugins.regret.bayes_ucb import BayesUCB
from armlab.plugins.regret.dmed import DMED
from armlab.plugins.regret.eucbv import EUCBV
from armlab.plugins.regret.klucb import KLUCB
from armlab.plugins.regret.median_elimination import MedianElimination
from armlab.plugins.regret.moss import MOSS
from armlab.plugins.regret.ocucb import OCUCB
from armlab.plugins.regret.ucb_improved import UCBImproved
from armlab.plugins.regret.ucbv import UCBV

__all__ = ["DMED", "EUCBV", "KLUCB", "MOSS", "OCUCB", "UCBV", "BayesUCB", "MedianElimination", "UCBImproved"]


@hookimpl
def armlab_register_policies():
    return [EUCBV, UCBV, MOSS, KLUCB, DMED, BayesUCB, OCUCB, UCBImproved, MedianElimination]
