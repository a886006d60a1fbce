"""Reduced-scale check of the thresholding paper's main ordering on experiment 5's instance.

At T = 10000 (the paper's horizon, paper noise reading) AugUCB has the lowest error of the
non-oracle methods (see the report / examples/thresholding/exp5.toml).  At a reduced horizon every
method misclassifies at least one of the 100 arms in nearly every run, so the error
*probability* cannot separate them; the mean number of misclassified arms (whose tail drives
that probability) still does.  Common random numbers make the paired differences precise.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import numpy as np
import pytest

from armlab.plugins.policies.uniform import Uniform
from armlab.plugins.thresholding import APT, AugUCB

EXP5 = Path(__file__).resolve().parents[3] / "examples" / "thresholding" / "exp5.toml"
REPLICAS, BUDGET = 40, 3000


def misclassified(simulate_gaussian, factory, source) -> np.ndarray:
    sim = simulate_gaussian(factory, source["means"], BUDGET, variances=source["variances"],
                         replicas=REPLICAS, seed=11)
    truth = np.asarray(source["means"]) >= 0.5
    return (sim.policies[0].recommend(sim.stats[0]) != truth).sum(axis=1)


@pytest.mark.slow
def test_augucb_misclassifies_fewer_arms_than_apt_and_ua(simulate_gaussian):
    source = tomllib.loads(EXP5.read_text(encoding="utf-8"))["source"]
    augucb = misclassified(simulate_gaussian, AugUCB, source)
    for other in (APT, lambda: Uniform({"order": "random"})):
        diff = misclassified(simulate_gaussian, other, source) - augucb
        stderr = diff.std(ddof=1) / np.sqrt(REPLICAS)
        # measured: APT - AugUCB = 2.5-3.3 arms (z 7-8), UA - AugUCB = 6.5 arms (z 11-15)
        assert diff.mean() > 3 * stderr, (diff.mean(), stderr)


EXP3 = Path(__file__).resolve().parents[3] / "examples" / "thresholding" / "published" / "exp3.toml"


@pytest.mark.slow
def test_authors_code_augucb_beats_apt_on_a_reduced_experiment_3(simulate_gaussian):
    """Experiment 3 as the authors ran it (published/exp3.toml), reduced: a budget of 3000
    instead of 10000, the standard deviations of the 90 arms at 0.4 halved (so the easy
    arms are as well resolved as at the full budget), 100 runs.  AugUCB's variance-aware
    width spends few pulls on those arms; APT, blind to variances, spends as many there as
    on the noisy arms 1-10.  At the full scale the two are 2 points apart at T (9.8 % and
    12.0 %, 500 runs: within noise), which a reduced test cannot resolve."""
    source = tomllib.loads(EXP3.read_text(encoding="utf-8"))["source"]
    variances = np.asarray(source["variances"])
    variances[10:] /= 4.0
    truth = np.asarray(source["means"]) >= 0.5
    wrong = {}
    for name, factory in (("augucb", lambda: AugUCB({"variant": "authors-code"})), ("apt", APT)):
        sim = simulate_gaussian(factory, source["means"], 3000, variances=list(variances), replicas=100, seed=7)
        wrong[name] = (sim.policies[0].recommend(sim.stats[0]) != truth).sum(axis=1)
        if name == "augucb":
            error = sim.cp_error[:, -1].mean()
    diff = wrong["apt"] - wrong["augucb"]
    stderr = diff.std(ddof=1) / np.sqrt(diff.size)
    # measured (seed 7): misclassified arms 0.41 (AugUCB) and 1.15 (APT), difference 0.74 +- 0.10;
    # error rates 36 % and 74 %
    assert diff.mean() > 3 * stderr, (diff.mean(), stderr)
    assert error < 0.5
