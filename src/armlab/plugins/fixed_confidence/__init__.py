"""(epsilon, m)-best-arm and fixed-confidence policies (UGapE, Gabillon et al. 2012; LUCB1)."""

from __future__ import annotations

from armlab.plugins import hookimpl
from armlab.plugins.fixed_confidence.lucb1 import LUCB1
from armlab.plugins.fixed_confidence.ugape import UGapEb, UGapEc


@hookimpl
def armlab_register_policies():
    return [UGapEb, UGapEc, LUCB1]
