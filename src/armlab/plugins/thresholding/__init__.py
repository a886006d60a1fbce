"""Thresholding-bandit policies: AugUCB (Mukherjee et al., IJCAI 2017) and its baselines.

Definitions, both variants where there are two: docs/algorithms/thresholding.md.

UA, the paper's uniform baseline, is the built-in ``uniform`` policy with ``order = "random"``.
"""

from __future__ import annotations

from armlab.plugins import hookimpl
from armlab.plugins.thresholding.apt import APT
from armlab.plugins.thresholding.augucb import AugUCB
from armlab.plugins.thresholding.csar import CSAR
from armlab.plugins.thresholding.ucbe import UCBE
from armlab.plugins.thresholding.ucbev import UCBEV


@hookimpl
def armlab_register_policies():
    return [AugUCB, APT, UCBE, UCBEV, CSAR]
