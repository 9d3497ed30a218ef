"""
Stop a sequential comparison early for futility: when more seeds, up to the cap, are unlikely to
turn an undecided look into a "better" verdict.

Without it, a tie (two modes within the seeds' noise of each other) runs every seed to the cap
when no `--margin` is given: the interval narrows with the seeds, but around a difference near 0
it never clears 0, and the cap's verdict is the same "undecided" the first look already
suggested, at the full protocol's cost (docs/RESULTS.md: four ties of five tasks at 100%).

The rule (non-binding futility by conditional power, Lan, Simon & Halperin 1982; Jennison &
Turnbull 2000, ch. 10), at a look before the cap that did not stop:

1. The variance of `D` the cap would have, from this look's parts (`sequential`'s step 4): the
   dev examples' part `E = max(V_data - R, 0)` does not shrink with seeds; the seeds' parts
   `s_m^2 / S_m` and the per-example noise floor `R` shrink as `S / cap`:
   `V_cap = max(E + s_a^2 / cap + s_b^2 / cap, R h / cap)`, `h = 2 / (1 / S_a + 1 / S_b)`.
2. The cap's difference given this look's, if the true difference is the one seen now (the
   "current trend"): the estimates of nested seed sets have `cov(D_k, D_cap) = V_cap`, so
   `D_cap | D_k ~ N(D_k, V_cap (1 - V_cap / V_k))`.
3. Conditional power: the chance that the cap decides, `CP = P(|D_cap| >= c_cap sqrt(V_cap))`
   ("better"), plus, with a margin M, `P(|D_cap| < M - c_cap sqrt(V_cap))` ("equivalent"),
   with `c_cap` the planned cap's standard-normal critical value (the normal, not the t
   quantile the cap's interval uses, and no credit taken for the looks in between: both make CP
   a little high, so the rule stops less often than it could).
4. `CP < futility` (default 0.1): stop, "undecided, futile".

Why it keeps the error rate: the "better" boundaries are the ones computed without the rule
(non-binding), so stopping for futility can only remove chances of a wrong "better" verdict; at
a true difference of 0 the rate stays at or under `alpha` (tests/results/test_sequential.py
measures it). What it costs is power: a comparison whose first looks happen to land near 0
while the true difference is real stops without finding it. The same simulations report that
loss, and `--futility 0` turns the rule off (every undecided pair runs to the cap, as before).

Measured (tests/results/test_sequential.py's simulations, the same comparisons with and without
the rule; accuracy on 1,000 dev examples, seeds shifting scores by 0.7 points, alpha 0.05,
O'Brien-Fleming, futility 0.1). At a true difference of 0, looks 3, 5, 7: 79% of 4,000 ties
stopped as futile, 4.35 seeds per mode on average against 6.98, and the wrong "better" verdicts
fell from 3.8% to 3.4% (where the seeds dominate, 2.5 points on 500 examples: 4.65% to 4.25%,
4.50 seeds against 6.96); looks 3, 5: 3.71 seeds against 4.99. Power, looks 3, 5, 7: at 3 points
99.2% against 99.6%, at 1.5 points 57.3% against 60.2% (5.58 seeds against 6.44), at 0.7 points
15.5% against 17.1%. With a margin of 3 at a difference of 0, as many ties end "equivalent".
"""

import math
from typing import Any, Optional, Sequence

import numpy as np
from scipy import special

DEFAULT_FUTILITY = 0.1


def conditional_power(
    parts: Sequence[Any], cap: int, cap_bound: float, margin: Optional[float] = None
) -> np.ndarray:
    """
    Steps 1-3 of the module docstring for arrays of looks (broadcast together).

    # Parameters

    parts : `Sequence[Any]`
        A look's statistics in `sequential.look_interval`'s order (its arguments but the
        bound): `D`, `V_data`, `R_a + R_b`, a's sample variance of its per-seed scores, a's
        seeds, b's variance, b's seeds.
    cap : `int`
        Seeds per mode at the last planned look.
    cap_bound : `float`
        The last look's standard-normal critical value.
    margin : `float`, optional
        The equivalence margin in points: the cap's "equivalent" counts as deciding too.

    # Returns

    `np.ndarray`
        The chance, in [0, 1], that the cap says "better" (or, with a margin, "equivalent") if
        the true difference is `D`.
    """
    difference, data_variance, residual_variance, var_a, seeds_a, var_b, seeds_b = parts
    seeds_a = np.asarray(seeds_a, dtype=np.float64)
    seeds_b = np.asarray(seeds_b, dtype=np.float64)
    var_a = np.asarray(var_a, dtype=np.float64)
    var_b = np.asarray(var_b, dtype=np.float64)
    floor = np.asarray(residual_variance, dtype=np.float64)
    examples = np.maximum(np.asarray(data_variance, dtype=np.float64) - floor, 0.0)
    now = np.maximum(examples + var_a / seeds_a + var_b / seeds_b, floor)
    harmonic = 2.0 / (1.0 / seeds_a + 1.0 / seeds_b)
    at_cap = np.maximum(examples + (var_a + var_b) / cap, floor * harmonic / cap)
    at_cap = np.minimum(at_cap, now)  # more seeds never add variance
    edge = cap_bound * np.sqrt(at_cap)
    spread = np.sqrt(np.maximum(at_cap * (1.0 - at_cap / np.where(now > 0, now, 1.0)), 0.0))
    size = np.abs(np.asarray(difference, dtype=np.float64))
    inner = np.maximum((margin or 0.0) - edge, 0.0)  # |D_cap| under it: "equivalent"
    with np.errstate(divide="ignore", invalid="ignore"):
        power = special.ndtr((size - edge) / spread) + special.ndtr((-size - edge) / spread)
        power = (
            power + special.ndtr((inner - size) / spread) - special.ndtr((-inner - size) / spread)
        )
    # No spread left (the seeds add nothing): the cap's difference is this look's.
    fixed = (size >= edge) | (size < inner)
    return np.clip(np.where(spread > 0, power, fixed.astype(np.float64)), 0.0, 1.0)


def chance_text(power: float) -> str:
    """`a 1.7% chance`, rounded down (a chance under the rule's 10% never reads as 10%), and
    `under a 0.1% chance` where that would read 0%."""
    chance = math.floor(1000 * power) / 10
    return f"a {chance:g}% chance" if chance > 0 else "under a 0.1% chance"


__all__ = ["DEFAULT_FUTILITY", "chance_text", "conditional_power"]
