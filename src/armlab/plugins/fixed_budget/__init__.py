"""Fixed-budget best-arm identification policies (the heterogeneous-variance paper and cited baselines).

Successive Rejects (``sr``), the provisional VBR (``vbr``), variance-adaptive sequential halving
(``shvar``, ``shadavar``) and the GapE family (``gape``, ``gapev``, ``agapev``).  Sequential
Halving (``sh``) and round-robin ``uniform`` (the heterogeneous-variance paper's Unif) live in ``armlab.plugins.policies``.
"""

from __future__ import annotations

from armlab.plugins import hookimpl
from armlab.plugins.fixed_budget.gape import AGapEV, GapE, GapEV
from armlab.plugins.fixed_budget.sh_variance import SHAdaVar, SHVar
from armlab.plugins.fixed_budget.successive_rejects import SuccessiveRejects
from armlab.plugins.fixed_budget.vbr import VBR


@hookimpl
def armlab_register_policies():
    return [SuccessiveRejects, VBR, SHVar, SHAdaVar, GapE, GapEV, AGapEV]
