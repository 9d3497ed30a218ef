"""
The planner's cost model: seconds per epoch and peak memory of a run, by mode (and task head),
from the size of its work. `plan.plan_cell` reads it; `fit.fit_cost_model` fits it from
finished runs and `fit.format_cost_model` prints the source text of `COST_MODEL` below.

Per mode, with `W` the train split's wordpieces, `L` x `H`^2 the encoder's FLOP scale, `P`
the encoder's parameters and `N` the train split's instances:

    seconds per epoch ~ a + b * W * L * H^2        peak RSS (MB) ~ c + d * P + g * N

The per-instance term `g` is there because the loaded dataset grows the process
(bench/README.md). For a cached `fe` run the first epoch is apart, `first_a + first_b * W * L *
H^2`, with `a` and `b` then the epochs after it: the first epoch runs the encoder and stores the
features, the later ones only read them.

A key is a mode (`"fe"`) or a mode and a task head (`"fe/tune_bcn"`, the model's registered
type); the planner prefers the head's entry, because a cached fe epoch is mostly the head's
work, which `W * L * H^2` does not see.

It is a CPU estimate (`torch` with two threads, `cuda_device: -1`), and a rough one: it knows
the encoder's work but not the task head's nor the validation data's, and it was fitted on one
encoder, so `d` extrapolates that encoder's memory per parameter to the others. Read its numbers
as orders of magnitude; docs/RESULTS.md compares the estimates with full-size runs.
"""

from dataclasses import dataclass
from typing import Dict, Optional

# Peak RSS (MB) of `python -c "import torch, allennlp.commands, allennlp_tune"` on the
# development machine (Python 3.11, torch CPU): what a run holds before it builds anything.
BASE_RSS_MB = 890.0


@dataclass(frozen=True)
class ModeCost:
    """
    One mode's coefficients of the cost model (module docstring).

    # Parameters

    a, b : `Optional[float]`
        Seconds per epoch `a + b * W * L * H^2`; for a cached fe entry, the epochs after the
        first. `b` None: no time estimate.
    c, d : `Optional[float]`
        Peak RSS MB `c + d * P` (plus `g * N`). `d` None: no memory estimate.
    runs : `int`
        How many runs the entry was fitted on.
    fitted_on : `str`
        Those runs, as `config/seed` names.
    first_a, first_b : `Optional[float]`
        A cached fe run's first epoch (encoder run, features stored); None for every other
        entry.
    g : `Optional[float]`
        Peak RSS MB per train instance; None where the runs did not tell it.
    """

    a: Optional[float]
    b: Optional[float]
    c: Optional[float]
    d: Optional[float]
    runs: int = 0
    fitted_on: str = ""
    first_a: Optional[float] = None
    first_b: Optional[float] = None
    g: Optional[float] = None

    def epoch_seconds(self, work: Optional[float]) -> Optional[float]:
        """Seconds of one epoch (a cached fe run: of a later one) for `work` = W x L x H^2."""
        if self.b is None or work is None:
            return None
        return (self.a or 0.0) + self.b * work

    def first_epoch_seconds(self, work: Optional[float]) -> Optional[float]:
        """Seconds of a cached fe run's first epoch, None for an entry without one."""
        if self.first_b is None or work is None:
            return None
        return (self.first_a or 0.0) + self.first_b * work

    def peak_rss_mb(
        self, params: Optional[int], instances: Optional[int] = None
    ) -> Optional[float]:
        """Peak RSS in MB of a run of an encoder of `params` parameters on `instances`."""
        if self.d is None or params is None:
            return None
        per_instance = (self.g or 0.0) * instances if instances is not None else 0.0
        return (self.c or 0.0) + self.d * params + per_instance


# Fitted with `fit.fit_cost_model` on this machine (2 CPU cores, no GPU) to MiniLM
# (all-MiniLM-L6-v2: L = 6, H = 384, P = 22,565,376) runs, then pasted from
# `format_cost_model(...)`; where `P` never varies, `c` is BASE_RSS_MB and `d` scales MiniLM's
# memory to other encoders. That scaling put MPNet (P = 108,895,488) at 5.9-7.1 GB where its
# SICK-E runs peaked at 2.8-4.6 GB (bench/README.md, "MPNet"), so the fe, ft and lora entries'
# c and d now go through one run of each encoder (SICK-E, N = 4,439); the times per epoch are
# still MiniLM's alone (the plan calibrates them on the user's machine).
# - "ft", "sf", "bitfit", "lora" and "fe/tune_bcn": the growth bench (bench/bench_growth.py,
#   bench/README.md): `sst2_bert_<mode>` on the first 1k, 4k, 16k and all 67,349 SST-2 sentences,
#   each alone on the idle machine, with its own feature cache (REFIT:
#   `fit_cost_model(sorted(Path("runs/growth").glob("n_*/<mode>/*/seed_1")))`; ft also with the
#   4k point run again, runs/growth_repeat). Every mode has all four sizes.
#   The lines through ft's, lora's and fe's cached epochs had negative intercepts, so a = 0
#   (the mean cost per unit of work). Out of sample, the ft entry says 232 s per epoch and
#   2.1 GB for STS-B ft (5,749 pairs), which took 181 s and 2.9 GB (docs/RESULTS.md section 12).
# - "fe" (pooled, for heads without an entry: the pair tasks' ESIM): tune-compare's SICK-E and
#   STS-B fe cells, 2 epochs each, on a loaded machine (a = 0, c = BASE_RSS_MB).
# - "fe/tune_tagger", "ft/tune_tagger": the full CoNLL-2003 runs of docs/RESULTS.md section 12
#   (one run each: they reproduce those cells, scaled by W x L x H^2).
COST_MODEL: Dict[str, ModeCost] = {
    # tune-compare's sick_e / sts_b fe cells (runs/real/compare); RAM refitted to two encoders
    # (MiniLM, MPNet: SICK-E fe, 1849.5 and 2758.9 MB; `fit_cost_model` on the two runs)
    "fe": ModeCost(a=0.0, b=8.55011e-10, c=1611.8, d=1.0534e-05, runs=4),
    # the growth bench: sst2_bert_fe at 1k, 4k, 16k and 67,349 sentences (the BCN: 21.0 M
    # trainable parameters)
    "fe/tune_bcn": ModeCost(
        a=0.0,
        b=1.54958e-09,
        c=890.0,
        d=5.32217e-05,
        first_a=8.5384,
        first_b=1.77302e-09,
        g=0.00942093,
        runs=4,
    ),
    # conll2003_bert_fe/seed_1 (the BiLSTM tagger: 1.9 M trainable parameters)
    "fe/tune_tagger": ModeCost(
        a=0.0, b=4.60917e-10, c=890.0, d=5.19734e-05, runs=1, first_a=0.0, first_b=1.08621e-09
    ),
    # the growth bench: sst2_bert_ft at 1k, 4k (twice), 16k and 67,349 sentences
    # (time); RAM: c and d through MiniLM's and MPNet's SICK-E ft peaks (2106.8, 4615.4 MB),
    # g as fitted on the growth bench
    "ft": ModeCost(a=0.0, b=1.63793e-09, c=1416.1, d=2.90582e-05, g=0.00787388, runs=5),
    # conll2003_bert_ft/seed_1
    "ft/tune_tagger": ModeCost(a=0.0, b=1.86579e-09, c=890.0, d=0.000114259, runs=1),
    # the growth bench at 1k, 4k, 16k and 67,349 sentences (3 epochs, the first frozen: their
    # mean)
    "sf": ModeCost(a=0.243967, b=1.28005e-09, c=890.0, d=6.74168e-05, g=0.0107354, runs=4),
    # the growth bench at 1k, 4k, 16k and 67,349 sentences (lr 3e-3)
    "bitfit": ModeCost(a=5.58552, b=8.47648e-10, c=890.0, d=3.51345e-05, g=0.00809187, runs=4),
    # the growth bench at 1k, 4k, 16k and 67,349 sentences (r 8, query / value, lr 5e-4)
    # (time); RAM: c and d through MiniLM's and MPNet's SICK-E LoRA peaks (1815.1, 3888.5 MB)
    "lora": ModeCost(a=0.0, b=1.05158e-09, c=1233.3, d=2.40171e-05, g=0.00897627, runs=4),
}


__all__ = ["BASE_RSS_MB", "COST_MODEL", "ModeCost"]
