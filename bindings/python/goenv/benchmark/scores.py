"""Normalized scores and their aggregates (docs/benchmark.md#scores).

A case's score puts a runtime between two committed anchors: 0 is the compiler default, 1 the
best decision anyone has found for the case (above 1: better than that). Aggregates follow
rliable's recommendations (Agarwal et al., NeurIPS 2021): the interquartile mean and the mean
over all cases x seeds, each with a 95% stratified-bootstrap interval (seeds resampled within
each case). rliable itself does not import beside the pinned pandas, so scipy's bootstrap,
which resamples each of several samples on its own, does the stratification."""

from __future__ import annotations

import math

import numpy as np

RESAMPLES = 2000


def normalized(runtime: float, default: float, best: float) -> float:
    """(default - runtime) / (default - best): 0 at the default, 1 at the best known."""
    return (default - runtime) / (default - best)


def iqm(scores: np.ndarray, axis: int = -1) -> np.ndarray:
    """The interquartile mean: the mean of the middle half."""
    from scipy import stats  # here, not at import: `goenv` commands that score nothing never load scipy

    return stats.trim_mean(scores, 0.25, axis=axis)


def aggregate(scores: np.ndarray, seed: int = 0) -> dict:
    """scores: (cases, seeds). {iqm, iqm_ci, mean, mean_ci}; an interval is [low, high], 95%."""
    from scipy import stats

    scores = np.asarray(scores, dtype=np.float64)
    out = {"iqm": float(iqm(scores.ravel())), "mean": float(scores.mean())}
    for name, statistic in (("iqm", iqm), ("mean", np.mean)):
        if scores.shape[1] < 2:  # one seed: nothing to resample within a case
            out[f"{name}_ci"] = [out[name], out[name]]
            continue

        def pooled(*per_case, axis=-1, statistic=statistic):
            return statistic(np.concatenate(per_case, axis=axis), axis=axis)

        result = stats.bootstrap(tuple(scores), pooled, n_resamples=RESAMPLES, method="percentile",
                                 vectorized=True, rng=np.random.default_rng(seed))
        low, high = result.confidence_interval
        out[f"{name}_ci"] = [float(low), float(high)]
    return out


def geometric_mean(ratios) -> float:
    """exp(mean(log)): the mean of runtime ratios."""
    ratios = np.asarray(list(ratios), dtype=np.float64)
    return float(math.exp(np.log(ratios).mean()))
