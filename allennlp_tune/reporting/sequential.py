"""
Stop adding seeds when the verdict is known: a group-sequential paired comparison of two modes.

Seeds of both modes are added in rounds, and after each round (a *look*) the difference
score(mode_a) - score(mode_b) gets an interval whose level is set by an alpha-spending rule, so
that the chance of a wrong "better" verdict over all looks together stays at `alpha`, however
many looks there are. The comparison stops at the first look that settles the verdict.

The procedure
-------------
A plan fixes, before any seed is trained, the looks (seeds per mode at each look, increasing,
e.g. 3, 5, 7; the last is the seed cap), the error rate `alpha` (two-sided, default 0.05) and the
spending function (default Lan-DeMets O'Brien-Fleming type). Optionally a margin `M` in points.

1. Information time. A look with `S_a` and `S_b` seeds is at time
   `t = min(1, 2 / (cap * (1/S_a + 1/S_b)))` (`S / cap` when both modes have S seeds), the share
   of the cap's seed-level information it holds.
2. Alpha spending. Of the two-sided `alpha`, `alpha(t)` may be spent by time t:
   O'Brien-Fleming type `alpha(t) = 2 - 2 Phi(z_{1-alpha/2} / sqrt(t))` (Lan & DeMets 1983), or
   Pocock type `alpha(t) = alpha ln(1 + (e - 1) t)`; `alpha(1) = alpha`. The look at the cap
   spends all that is left, whatever the looks before it.
3. Boundary. Look k's critical value `c_k` makes the chance, for standard normal statistics
   `Z_1..Z_k` with `corr(Z_i, Z_j) = sqrt(t_i / t_j)` (i < j; one Brownian motion seen at the
   looks' times), that `|Z_k| >= c_k` while `|Z_i| < c_i` at every earlier look equal to
   `alpha(t_k) - alpha(t_(k-1))` (computed by numerical integration on a grid, as in Jennison &
   Turnbull 2000, ch. 19). Its nominal two-sided level is `p_k = 2 (1 - Phi(c_k))`.
4. Estimate and its variance, from the runs' dev predictions (the seeds so far), all from one
   call of `allennlp_tune.reporting.paired.compare_modes` with the seeds held fixed
   (`resample_seeds=False`: dev examples resampled, the same resample for every mode and seed):
   - `D` = mean over a's seeds - mean over b's seeds of the metric on the full dev set (points);
   - `V_data`: the bootstrap variance of `D`;
   - `R_m` = (mean over mode m's seeds j of the bootstrap variance of score_j - mean score of m)
     / (S_m - 1): the share of `V_data` that is m's seeds' own per-example noise;
   - `s_m^2`: the sample variance (n - 1) of mode m's per-seed full-dev scores (seeds' spread);
   - `V = max(max(V_data - R_a - R_b, 0) + s_a^2 / S_a + s_b^2 / S_b, R_a + R_b)`.
   Examples and seeds are crossed (every seed scores every example), so `V_data` and the seeds'
   spread both hold each seed's per-example noise; `R` removes the second count (an unbiased
   variance-components estimate for a crossed design: `D` = example effects + seed effects +
   their interaction, Var(D) = s_ex^2 / n + sum over modes of (s_seed^2 + s_int^2 / n) / S).
   `R_a + R_b` estimates the last terms' `s_int^2 / (n S)`, the least `Var(D)` can be, and is
   `V`'s floor: with a few seeds, each mode's seeds can score the same (common for accuracy on a
   small dev set) while they differ example by example, and without the floor `V` would
   collapse towards 0 and the interval to a point (a false "equivalent" or "better"). A floor
   per mode (`max(s_m^2 / S_m, R_m)`) would be more conservative still: it drops the error
   rate at a true difference of 0 to 1.6% where seeds barely shift the score (0.2 points on
   1,000 examples), against 2.1% for the floor on the sum, which loses less power.
   Degrees of freedom (Welch-Satterthwaite; the dev-example part counts as known):
   `nu = V^2 / ((s_a^2/S_a)^2 / (S_a - 1) + (s_b^2/S_b)^2 / (S_b - 1))` (infinite when both
   seed variances are 0). Each mode needs at least 2 seeds at every look.
5. Interval: `D +- q_k sqrt(V)`, with `q_k` the `1 - p_k / 2` quantile of Student's t with `nu`
   degrees of freedom (the normal's `c_k` when nu is infinite).
6. Decision at the look, in this order:
   - the interval lies above 0: **mode_a better**; below 0: **mode_b better** (stop);
   - a margin M is given and the interval lies inside (-M, +M): **equivalent within M** (stop);
   - before the cap, the chance that the cap would decide (at the difference seen now) is
     under `plan.futility`: **undecided, futile** (stop; `allennlp_tune.reporting.futility`);
   - otherwise, before the cap: **undecided, continue** (train up to the next look's seeds);
     at the cap: **undecided at the seed cap** (stop).
   A "better" verdict whose interval also lies inside (-M, +M) says so (`within_margin`): one
   mode is better, by less than the margin.

What holds. When the modes are equally good (true difference 0) the chance that any look says
"better" is at most `alpha` (up to the normal and Student-t approximations; the simulations in
tests/results/test_sequential.py measure it). Stopping for equivalence only removes later
chances to err, so it keeps that bound. The equivalence verdict is TOST-style on the same
interval: each of its two one-sided tests is at `p_k / 2`, so when the true difference is +-M
the chance of "equivalent" over all looks is about `alpha / 2`. Several pairs of modes compared
at once each hold their own `alpha`; nothing here corrects for the number of pairs.

Measured without the futility rule (tests/results/test_sequential.py, which prints these;
accuracy on 1,000 dev examples, per-seed shift 0.7 points, looks 3, 5, 7, alpha 0.05,
O'Brien-Fleming): at a true difference of 0, 3.8% of 4,000 comparisons said "better" (Pocock
2.8%; 95% intervals at the same looks 7.4%); at 3 points 99.4% found the better mode with 5.0
seeds on average, at 0.7 points 16.6%; with a margin of 3 and no difference, 96% stopped as
"equivalent" (5.3 seeds). At 0 in other regimes (2,000 each, s.e. 0.5%): seed shifts of 0.2 /
1.5 points 2.1% / 5.2% (naive 5.3% / 9.6%), 300 and 5,000 examples 3.0% / 4.2%, shifts of 2.5
points on 500 examples 4.7% (naive 9.3%); without the floor on `V` the first two read 4.4% and
4.7%. Looks 2, 3, 5, 7: 3.8% at 0, 4.9% where seeds dominate; 3.96 seeds at 5 points (4.28).
With the rule (`futility`'s docstring), ties stop at 4.4 seeds of 7 on average instead of 7.0.

Why these choices
-----------------
- Alpha spending rather than an always-valid (anytime) interval: the looks are few and known
  (rounds of seeds), which is where planned looks are most efficient, and an always-valid
  interval (a confidence sequence) pays for validity at every possible look with an interval
  much wider at the looks we do take. Confidence sequences also assume independent increments
  of a stream of observations; here the dev set is shared by all looks (only the seeds are
  added), which the spending approach covers exactly (the statistics of nested seed sets have
  the canonical covariance, `cov(D_i, D_j) = var(D_j)` for i < j).
- O'Brien-Fleming type by default: it spends almost nothing at the first looks, where 3 seeds
  give a poor estimate of the seeds' spread (few degrees of freedom, where the t approximation
  is weakest), and it leaves the last look's level close to the fixed-sample 95%, so a
  comparison that runs to the cap loses almost nothing against a plain one. Pocock spends evenly:
  earlier stops for large differences, a wider interval at the cap.
- Information time in seeds, planned, not observed: the boundaries can be computed (and printed)
  before anything trains. The true information grows more slowly than the seeds when the dev
  set's own sampling error (shared by all looks) is large; the looks are then more correlated
  than assumed, which makes the procedure conservative, not liberal.
- Normal-theory interval with a t quantile instead of bootstrap percentiles: an early look's
  nominal level is tiny (about 0.3% at 3 of 7 seeds), far in the bootstrap distribution's tails,
  and with 3 seeds a percentile interval that resamples seeds shrinks the seed part of the
  variance by (S - 1)/S and has no small-sample allowance. The unbiased between-seed variance
  with Student's t is what keeps the error rate at 3 seeds. Without the `R` correction the
  simulations' standard error was 30% too wide (1.10 against a true 0.85 points) and the error
  rate a fifth of `alpha`: safe, but power thrown away.
"""

import functools
import math
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np
from scipy import optimize, special, stats

from allennlp_tune.reporting import labels
from allennlp_tune.reporting.futility import DEFAULT_FUTILITY, chance_text, conditional_power
from allennlp_tune.reporting.paired import compare_modes
from allennlp_tune.reporting.predictions import Predictions, PredictionsLike, as_predictions

OBRIEN_FLEMING = "obrien-fleming"
POCOCK = "pocock"
SPENDING = (OBRIEN_FLEMING, POCOCK)
DEFAULT_ALPHA = 0.05
DEFAULT_LOOKS = (3, 5, 7)
# The paired bootstrap only supplies V_data here (a standard error, not a tail): fewer replicates
# than the report's 2000 are enough (relative error of a standard error ~ 1 / sqrt(2 B)).
DEFAULT_REPLICATES = 1000

# Decisions, as codes (vectorised) and as `Look.decision`.
A_BETTER = "a better"
B_BETTER = "b better"
EQUIVALENT = "equivalent"
CONTINUE = "undecided, continue"
AT_CAP = "undecided at the seed cap"
FUTILE = "undecided, futile"
CODES = {1: A_BETTER, -1: B_BETTER, 2: EQUIVALENT, 0: CONTINUE, 3: AT_CAP, 4: FUTILE}

# Grid points per look for the boundary's numerical integration.
GRID_POINTS = 2001


def spent(t: Union[float, np.ndarray], alpha: float, spending: str = OBRIEN_FLEMING) -> Any:
    """
    The two-sided error that may be spent by information time `t` in [0, 1].

    # Parameters

    t : `float` or `np.ndarray`
        Information time (0: nothing seen; 1: the seed cap).
    alpha : `float`
        The total two-sided error rate.
    spending : `str`
        `"obrien-fleming"` (Lan-DeMets O'Brien-Fleming type) or `"pocock"` (Lan-DeMets Pocock
        type).
    """
    t = np.clip(np.asarray(t, dtype=np.float64), 0.0, 1.0)
    if spending == OBRIEN_FLEMING:
        z = stats.norm.ppf(1 - alpha / 2)
        with np.errstate(divide="ignore"):
            out = np.where(t > 0, 2 - 2 * stats.norm.cdf(z / np.sqrt(np.maximum(t, 1e-300))), 0)
    elif spending == POCOCK:
        out = alpha * np.log1p((math.e - 1) * t)
    else:
        raise ValueError(f"spending {spending!r}: expected one of {', '.join(SPENDING)}")
    return float(out) if out.ndim == 0 else out


def _simpson_weights(points: int, step: float) -> np.ndarray:
    """Simpson's rule weights for `points` (odd) equally spaced points `step` apart."""
    weights = np.ones(points)
    weights[1:-1:2] = 4
    weights[2:-1:2] = 2
    return weights * step / 3


def _normal_pdf(z: np.ndarray) -> np.ndarray:
    """The standard normal density (without scipy's overhead: it runs on large grids)."""
    return np.exp(-0.5 * z * z) / math.sqrt(2 * math.pi)


def _exit_probability(
    bound: float, time: float, grid: np.ndarray, mass: np.ndarray, scale: float
) -> float:
    """P(|B(time)| >= bound sqrt(time)) from the previous look's continuation sub-density."""
    edge = bound * math.sqrt(time)
    return float(
        mass @ (special.ndtr((grid - edge) / scale) + special.ndtr((-edge - grid) / scale))
    )


def _exit_excess(bound: float, *arguments: Any) -> float:
    """The exit probability at `bound` less its target (the last argument): brentq's root."""
    *rest, target = arguments
    return _exit_probability(bound, *rest) - target


@functools.lru_cache(maxsize=256)
def _boundaries(times: Tuple[float, ...], alpha: float, spending: str) -> Tuple[float, ...]:
    """
    Critical values by the recursive numerical integration of Armitage, McPherson & Rowe (1969)
    on the Brownian-motion scale B(t) = Z sqrt(t): the sub-density of B at each look on its
    continuation region (|B| < c sqrt(t)), Simpson's rule on a grid of `GRID_POINTS`.
    """
    bounds: List[float] = []
    grid = mass = np.zeros(0)  # B values of the last continuation region; density x weights
    previous_time, previous_spent = 0.0, 0.0
    for time in times:
        spent_now = spent(time, alpha, spending)
        target = spent_now - previous_spent
        step = time - previous_time
        if not bounds:
            bound = float(stats.norm.isf(target / 2)) if target > 0 else math.inf
        elif target <= 1e-14:
            bound = math.inf
        else:
            arguments = (time, grid, mass, math.sqrt(step), target)
            bound = float(optimize.brentq(_exit_excess, 1e-6, 50.0, args=arguments))
        bounds.append(bound)
        # The continuation region, for the next look (an infinite bound keeps +-10 standard
        # deviations, beyond which no mass is left).
        edge = min(bound, 10.0) * math.sqrt(time)
        new_grid = np.linspace(-edge, edge, GRID_POINTS)
        if len(grid) == 0:
            density = _normal_pdf(new_grid / math.sqrt(time)) / math.sqrt(time)
        else:
            scale = math.sqrt(step)
            density = _normal_pdf((new_grid[:, None] - grid[None, :]) / scale) @ mass / scale
        grid = new_grid
        mass = density * _simpson_weights(GRID_POINTS, grid[1] - grid[0])
        previous_time, previous_spent = time, spent_now
    return tuple(bounds)


def boundaries(
    times: Sequence[float], alpha: float = DEFAULT_ALPHA, spending: str = OBRIEN_FLEMING
) -> List[float]:
    """
    The critical values `c_k` (step 3 of the module docstring) of looks at information `times`.

    # Parameters

    times : `Sequence[float]`
        Increasing information times in (0, 1]; a time of 1 spends all of `alpha` that is left.
    alpha : `float`
        Two-sided error rate over all looks.
    spending : `str`
        `"obrien-fleming"` or `"pocock"`.

    # Returns

    `List[float]`
        One standard-normal critical value per look (`inf` where nothing is spent).
    """
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be between 0 and 1, not {alpha}")
    times = [float(t) for t in times]
    if not times or any(not 0 < t <= 1 for t in times):
        raise ValueError(f"information times must lie in (0, 1], got {times}")
    if any(b <= a for a, b in zip(times, times[1:])):
        raise ValueError(f"information times must increase, got {times}")
    spent(0.5, alpha, spending)  # checks the name
    return list(_boundaries(tuple(round(t, 12) for t in times), float(alpha), spending))


def nominal_levels(bounds: Sequence[float]) -> List[float]:
    """Each look's nominal two-sided level `p_k = 2 (1 - Phi(c_k))`."""
    return [float(2 * stats.norm.sf(c)) for c in bounds]


@dataclass(frozen=True)
class SequentialPlan:
    """
    The looks, error rate and spending rule, fixed before any seed is trained.

    # Parameters

    looks : `Tuple[int, ...]`
        Seeds per mode at each look, increasing; the last is the seed cap. At least 2 at the
        first look (the seeds' spread needs two).
    alpha : `float`
        Two-sided error rate of the "better" verdicts over all looks.
    spending : `str`
        `"obrien-fleming"` (default) or `"pocock"`.
    futility : `float`
        A look before the cap stops as "undecided, futile" when the chance that the cap would
        decide is under this (`futility.conditional_power`); 0 never stops for it.
    """

    looks: Tuple[int, ...] = DEFAULT_LOOKS
    alpha: float = DEFAULT_ALPHA
    spending: str = OBRIEN_FLEMING
    futility: float = DEFAULT_FUTILITY

    def __post_init__(self) -> None:
        looks = tuple(int(k) for k in self.looks)
        object.__setattr__(self, "looks", looks)
        if not looks or looks[0] < 2 or any(b <= a for a, b in zip(looks, looks[1:])):
            raise ValueError(f"looks must be increasing seed counts from 2 up, got {looks}")
        boundaries([1.0], self.alpha, self.spending)  # checks alpha and the rule
        if not 0 <= self.futility < 1:
            raise ValueError(f"futility must lie in [0, 1), not {self.futility}")

    @property
    def cap(self) -> int:
        """The seed cap: seeds per mode at the last look."""
        return self.looks[-1]

    def time(self, seeds_a: int, seeds_b: Optional[int] = None) -> float:
        """Information time of a look with these seeds (step 1)."""
        seeds_b = seeds_a if seeds_b is None else seeds_b
        return min(1.0, 2.0 / (self.cap * (1.0 / seeds_a + 1.0 / seeds_b)))

    def boundaries(self) -> List[float]:
        """The planned looks' critical values."""
        return boundaries([self.time(k) for k in self.looks], self.alpha, self.spending)

    def levels(self) -> List[float]:
        """The planned looks' nominal two-sided levels `p_k`."""
        return nominal_levels(self.boundaries())

    def next_seeds(self, seeds: int) -> Optional[int]:
        """Seeds per mode at the look after one with `seeds`; `None` at or past the cap."""
        later = [k for k in self.looks if k > seeds]
        return later[0] if later else None

    def describe(self) -> str:
        """One sentence for a report's notes."""
        levels = ", ".join(
            f"{k} seeds {100 * (1 - p):.2f}%" for k, p in zip(self.looks, self.levels())
        )
        name = "O'Brien-Fleming" if self.spending == OBRIEN_FLEMING else "Pocock"
        futility = "; a pair stops as futile before the cap when the chance that the cap "
        futility += f"decides (at the difference seen) is under {self.futility:.0%}"
        return (
            f"Group-sequential paired comparison: looks after {', '.join(map(str, self.looks))} "
            f"seeds per mode, Lan-DeMets {name}-type alpha spending of {self.alpha:g} two-sided "
            f"(interval levels {levels}, Student-t on the seeds' degrees of freedom)"
            f"{futility if self.futility > 0 else ''}."
        )


# The statistics of a look, vectorised ----------------------------------------------------------


def look_interval(
    difference: Any,
    data_variance: Any,
    residual_variance: Any,
    seed_variance_a: Any,
    seeds_a: Any,
    seed_variance_b: Any,
    seeds_b: Any,
    bound: Any,
) -> Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """
    Steps 4-5 of the module docstring for arrays of comparisons (broadcast together).

    # Parameters

    difference : `array`
        `D`, mean score of a's seeds - mean score of b's seeds.
    data_variance : `array`
        `V_data`, the paired bootstrap's variance of `D` with the seeds fixed.
    residual_variance : `array`
        `R_a + R_b`, the seeds' per-example noise within `V_data`; also `V`'s floor.
    seed_variance_a, seed_variance_b : `array`
        Sample variances (n - 1) of each mode's per-seed scores.
    seeds_a, seeds_b : `array`
        Seeds per mode (at least 2).
    bound : `array`
        The look's standard-normal critical value `c_k`.

    # Returns

    `Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]`
        The interval's low and high ends, the degrees of freedom `nu` and `sqrt(V)`.
    """
    seeds_a = np.asarray(seeds_a, dtype=np.float64)
    seeds_b = np.asarray(seeds_b, dtype=np.float64)
    if np.any(seeds_a < 2) or np.any(seeds_b < 2):
        raise ValueError("each mode needs at least 2 seeds at a look (the seeds' spread)")
    part_a = np.asarray(seed_variance_a, dtype=np.float64) / seeds_a
    part_b = np.asarray(seed_variance_b, dtype=np.float64) / seeds_b
    examples = np.asarray(data_variance, dtype=np.float64) - np.asarray(
        residual_variance, dtype=np.float64
    )
    floor = np.asarray(residual_variance, dtype=np.float64)
    variance = np.maximum(np.maximum(examples, 0.0) + part_a + part_b, floor)
    spread = part_a**2 / (seeds_a - 1) + part_b**2 / (seeds_b - 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        df = np.where(spread > 0, variance**2 / np.where(spread > 0, spread, 1.0), np.inf)
    bound = np.asarray(bound, dtype=np.float64)
    level = 2 * stats.norm.sf(bound)
    quantile = np.where(np.isfinite(df), stats.t.isf(level / 2, np.minimum(df, 1e12)), bound)
    quantile = np.where(np.isfinite(bound), quantile, np.inf)
    half = quantile * np.sqrt(variance)
    half = np.where(np.isnan(half), np.inf, half)  # inf * 0: an infinite bound decides nothing
    difference = np.asarray(difference, dtype=np.float64)
    return difference - half, difference + half, df, np.sqrt(variance)


def decide(low: Any, high: Any, margin: Optional[float] = None, at_cap: Any = False) -> np.ndarray:
    """
    Step 6 for arrays of intervals: 1 (a better), -1 (b better), 2 (equivalent within the
    margin), 0 (undecided, continue) or 3 (undecided at the seed cap); `CODES` names them.

    # Parameters

    low, high : `array`
        The look's interval ends.
    margin : `float`, optional
        The equivalence margin M > 0 in points; no equivalence verdict when `None`.
    at_cap : `array` of `bool`
        Whether the look is at the seed cap.
    """
    low = np.asarray(low, dtype=np.float64)
    high = np.asarray(high, dtype=np.float64)
    codes = np.where(np.asarray(at_cap, dtype=bool), 3, 0) * np.ones_like(low, dtype=np.int64)
    if margin is not None:
        if not margin > 0:
            raise ValueError(f"margin must be positive, not {margin}")
        codes = np.where((low > -margin) & (high < margin), 2, codes)
    codes = np.where(low > 0, 1, np.where(high < 0, -1, codes))
    return codes


# A look from the runs' predictions ---------------------------------------------------------------


@dataclass(frozen=True)
class Look:
    """One look of a sequential comparison (points, ×100 like tune-report)."""

    mode_a: str
    mode_b: str
    metric: str
    index: int  # 0-based look number
    seeds_a: int
    seeds_b: int
    time: float  # information time
    bound: float  # c_k
    level: float  # 1 - p_k, the interval's nominal confidence
    difference: float  # D
    low: float
    high: float
    df: float  # nu
    std_error: float  # sqrt(V)
    data_std_error: float  # sqrt(V_data)
    decision: str  # one of CODES' values
    margin: Optional[float] = None
    within_margin: bool = False  # the interval lies inside (-margin, +margin)
    scores_a: Tuple[float, ...] = field(default=(), repr=False)
    scores_b: Tuple[float, ...] = field(default=(), repr=False)
    power: Optional[float] = None  # the chance that the cap decides (before the cap only)

    @property
    def stop(self) -> bool:
        """Whether the comparison ends at this look (every decision but "continue")."""
        return self.decision != CONTINUE

    @property
    def verdict(self) -> str:
        """A mode's name, `equivalent`, `continue` or `undecided` (a report's short word)."""
        return {
            A_BETTER: self.mode_a,
            B_BETTER: self.mode_b,
            EQUIVALENT: EQUIVALENT,
            CONTINUE: "continue",
            AT_CAP: "undecided",
            FUTILE: "undecided",
        }[self.decision]

    def text(self, digits: int = 1) -> str:
        """`ft better: +1.2 [+0.3, +2.1] (98.9% interval, 5 seeds each)`."""

        def signed(value: float) -> str:
            return labels.signed(value, digits)

        if self.decision == A_BETTER:
            said = f"{self.mode_a} better"
        elif self.decision == B_BETTER:
            said = f"{self.mode_b} better"
        elif self.decision == EQUIVALENT:
            said = f"equivalent within {self.margin:g}"
        elif self.decision == FUTILE and self.power is not None:
            said = f"{FUTILE} ({chance_text(self.power)} that the seed cap decides)"
        else:
            said = self.decision
        if self.within_margin and self.decision in (A_BETTER, B_BETTER):
            said += f" (by less than {self.margin:g})"
        seeds = (
            f"{self.seeds_a} seeds each"
            if self.seeds_a == self.seeds_b
            else f"{self.seeds_a} + {self.seeds_b} seeds"
        )
        return (
            f"{said}: {signed(self.difference)} [{signed(self.low)}, {signed(self.high)}] "
            f"({100 * self.level:.1f}% interval, {seeds})"
        )

    def as_dict(self) -> Dict[str, Any]:
        return {name: getattr(self, name) for name in self.__dataclass_fields__}


@dataclass(frozen=True)
class _Estimate:
    """Step 4's ingredients at one look (points), before they become `V` and an interval."""

    metric: str
    difference: float  # D
    data_std_error: float  # sqrt(V_data)
    residual_variance: float  # R_a + R_b
    scores_a: List[float]  # each of a's seeds' score on the full dev set
    scores_b: List[float]


class SequentialComparison:
    """
    Two modes compared look by look (the module docstring's procedure).

    The seed loop calls `look` with all the seeds of both modes so far (each look's seeds
    include the previous look's), stops when `Look.stop`, and otherwise trains up to
    `next_seeds` seeds per mode. Boundaries follow the looks actually taken: a look with other
    seed counts than planned is at its own information time (the Lan-DeMets spending function
    allows that), and a look at or past the cap spends what is left.

    # Parameters

    names : `Tuple[str, str]`
        (mode_a, mode_b); the difference is mode_a - mode_b.
    metric : `str`
        A metric the paired bootstrap knows (`scorers.METRICS`).
    plan : `SequentialPlan`
        Looks, alpha and spending rule.
    margin : `float`, optional
        Equivalence margin in points (`--margin`).
    replicates : `int`
        Bootstrap replicates behind `V_data`.
    seed : `int`
        The bootstrap's random seed (each look uses `seed + look index`).
    **options : `Any`
        `positive_label`, `tag_encoding`, `scale` as `paired.compare_modes`.
    """

    def __init__(
        self,
        names: Tuple[str, str],
        metric: str,
        plan: Optional[SequentialPlan] = None,
        margin: Optional[float] = None,
        replicates: int = DEFAULT_REPLICATES,
        seed: int = 0,
        **options: Any,
    ) -> None:
        if names[0] == names[1]:
            raise ValueError(f"names must differ, got {names}")
        if margin is not None and not margin > 0:
            raise ValueError(f"margin must be positive, not {margin}")
        self.names = names
        self.metric = metric
        self.plan = plan or SequentialPlan()
        self.margin = margin
        self.replicates = replicates
        self.seed = seed
        self.options = options
        self.looks: List[Look] = []

    @property
    def done(self) -> bool:
        """Whether the last look stopped the comparison."""
        return bool(self.looks) and self.looks[-1].stop

    def next_seeds(self) -> Optional[int]:
        """Seeds per mode to train up to before the next look; `None` once stopped."""
        if not self.looks:
            return self.plan.looks[0]
        if self.done:
            return None
        return self.plan.next_seeds(min(self.looks[-1].seeds_a, self.looks[-1].seeds_b))

    def look(self, runs_a: Sequence[PredictionsLike], runs_b: Sequence[PredictionsLike]) -> Look:
        """
        The next look, from all seeds so far of each mode (predictions, paths or records),
        following the module docstring's steps: the look's information time (step 1), its
        critical value (steps 2-3), the estimate and its variance (step 4), the interval
        (step 5) and the decision (step 6). The look is kept, so the next one's boundary
        accounts for it.

        # Parameters

        runs_a, runs_b : `Sequence[PredictionsLike]`
            Each mode's seeds' dev predictions, more than at the previous look.

        # Returns

        `Look`
            The look; `Look.stop` says whether the comparison ends with it.
        """
        if self.done:
            raise ValueError(f"the comparison already stopped: {self.looks[-1].text()}")
        runs_a, runs_b = self._seeds_of_both_modes(runs_a, runs_b)
        time = self._information_time(len(runs_a), len(runs_b))
        bound = self._critical_value(time)
        estimate = self._estimate(runs_a, runs_b)
        parts = (
            estimate.difference,
            estimate.data_std_error**2,
            estimate.residual_variance,
            np.var(estimate.scores_a, ddof=1),
            len(runs_a),
            np.var(estimate.scores_b, ddof=1),
            len(runs_b),
        )
        low, high, df, std_error = look_interval(*parts, bound)
        code = int(decide(low, high, self.margin, time >= 1.0 - 1e-9))
        power = None  # before the cap: the chance that the cap decides (`futility`)
        if time < 1.0 - 1e-9:
            bound_at_cap = self._cap_bound(time)
            power = float(conditional_power(parts, self.plan.cap, bound_at_cap, self.margin))
            code = 4 if code == 0 and power < self.plan.futility else code
        within = self.margin is not None and bool(-self.margin < low and high < self.margin)
        look = Look(
            mode_a=self.names[0],
            mode_b=self.names[1],
            metric=estimate.metric,
            index=len(self.looks),
            seeds_a=len(runs_a),
            seeds_b=len(runs_b),
            time=time,
            bound=bound,
            level=1 - float(2 * stats.norm.sf(bound)),
            difference=estimate.difference,
            low=float(low),
            high=float(high),
            df=float(df),
            std_error=float(std_error),
            data_std_error=estimate.data_std_error,
            decision=CODES[code],
            margin=self.margin,
            within_margin=within,
            scores_a=tuple(estimate.scores_a),
            scores_b=tuple(estimate.scores_b),
            power=power,
        )
        self.looks.append(look)
        return look

    def _seeds_of_both_modes(
        self, runs_a: Sequence[PredictionsLike], runs_b: Sequence[PredictionsLike]
    ) -> Tuple[List[Predictions], List[Predictions]]:
        """Each mode's runs as `Predictions`, at least 2 per mode (the seeds' spread needs two)."""
        a, b = self.names
        loaded_a = [as_predictions(r, f"{a} seed #{k + 1}") for k, r in enumerate(runs_a)]
        loaded_b = [as_predictions(r, f"{b} seed #{k + 1}") for k, r in enumerate(runs_b)]
        if min(len(loaded_a), len(loaded_b)) < 2:
            raise ValueError(
                f"{a} has {len(loaded_a)} and {b} {len(loaded_b)} seeds: a look needs at least "
                "2 of each (the seeds' spread)"
            )
        return loaded_a, loaded_b

    def _information_time(self, seeds_a: int, seeds_b: int) -> float:
        """Step 1: the look's information time, which must be past the last look's."""
        time = self.plan.time(seeds_a, seeds_b)
        if self.looks and time <= self.looks[-1].time:
            raise ValueError(
                f"a look needs more seeds than the last one ({self.looks[-1].seeds_a} + "
                f"{self.looks[-1].seeds_b}), got {seeds_a} + {seeds_b}"
            )
        return time

    def _critical_value(self, time: float) -> float:
        """
        Steps 2-3: the critical value of a look at `time` after the looks already taken, so
        the boundaries follow the looks' actual times rather than the planned ones.
        """
        times = [previous.time for previous in self.looks] + [time]
        return boundaries(times, self.plan.alpha, self.plan.spending)[-1]

    def _cap_bound(self, time: float) -> float:
        """The cap's critical value after the looks taken, this one and the planned rest."""
        times = [previous.time for previous in self.looks] + [time]
        times += [t for t in (self.plan.time(k) for k in self.plan.looks) if t > time + 1e-9]
        return boundaries(times, self.plan.alpha, self.plan.spending)[-1]

    def _estimate(self, runs_a: List[Predictions], runs_b: List[Predictions]) -> "_Estimate":
        """
        Step 4's ingredients, from one call of `compare_modes` and so one set of resamples
        (seeded `seed + look index`): `D` and `V_data` from the pair (a, b), and each seed's
        score and its bootstrap variance around its mode's mean from the pairs (seed, mode),
        where every seed is a mode of its own.
        """
        a, b = self.names
        by_mode: Dict[str, List[Predictions]] = {a: runs_a, b: runs_b}
        pairs = [(a, b)]
        for name, runs in ((a, runs_a), (b, runs_b)):
            for k, run in enumerate(runs):
                by_mode[f"{name} seed #{k + 1}"] = [run]
                pairs.append((f"{name} seed #{k + 1}", name))
        results = compare_modes(
            by_mode,
            self.metric,
            pairs=pairs,
            replicates=self.replicates,
            seed=self.seed + len(self.looks),
            resample_seeds=False,
            **self.options,
        )
        main, per_seed = results[0], results[1:]
        seeds_a = len(runs_a)
        # R_a + R_b: each mode's mean bootstrap variance of a seed around the mode's mean,
        # over S_m - 1.
        residual = sum(
            float(np.mean([r.std_error**2 for r in part])) / (len(part) - 1)
            for part in (per_seed[:seeds_a], per_seed[seeds_a:])
        )
        return _Estimate(
            metric=main.metric,
            difference=main.difference,
            data_std_error=main.std_error,
            residual_variance=residual,
            scores_a=[r.score_a for r in per_seed[:seeds_a]],
            scores_b=[r.score_a for r in per_seed[seeds_a:]],
        )


def replay(
    runs_a: Sequence[PredictionsLike],
    runs_b: Sequence[PredictionsLike],
    metric: str,
    names: Tuple[str, str] = ("a", "b"),
    plan: Optional[SequentialPlan] = None,
    margin: Optional[float] = None,
    **options: Any,
) -> List[Look]:
    """
    The looks a sequential comparison would have taken over seeds that already exist (in their
    order: the first `looks[0]` seeds of each mode at the first look, and so on), up to the
    look that stopped it; the last look uses all the seeds when there are fewer than the cap.

    # Parameters

    runs_a, runs_b : `Sequence[PredictionsLike]`
        Each mode's seeds' dev predictions, in the order they were trained.
    metric, names, plan, margin, **options
        As `SequentialComparison`.
    """
    comparison = SequentialComparison(names, metric, plan, margin, **options)
    available = min(len(runs_a), len(runs_b))
    for seeds in comparison.plan.looks:
        take = min(seeds, available)
        if comparison.looks and take <= comparison.looks[-1].seeds_a:
            break
        look = comparison.look(list(runs_a)[:take], list(runs_b)[:take])
        if look.stop or take < seeds:
            break
    return comparison.looks


__all__ = [
    "A_BETTER",
    "AT_CAP",
    "B_BETTER",
    "CODES",
    "CONTINUE",
    "EQUIVALENT",
    "FUTILE",
    "Look",
    "OBRIEN_FLEMING",
    "POCOCK",
    "SequentialComparison",
    "SequentialPlan",
    "boundaries",
    "decide",
    "look_interval",
    "nominal_levels",
    "replay",
    "spent",
]
