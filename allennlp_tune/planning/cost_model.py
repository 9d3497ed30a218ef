"""
The planner's cost model: seconds per epoch and peak memory of a run, by mode (and task head),
from the size of its work. `plan.plan_cell` reads it; `fit.fit_cost_model` fits it from
finished runs and `fit.format_cost_model` prints the source text of `COST_MODEL` below.

Per mode, with `W` the train split's wordpieces, `L` x `H`^2 the encoder's FLOP scale, `P`
the encoder's parameters and `N` the train split's instances:

    seconds per epoch ~ a + b * W * L * H^2 + e * W * L * H (+ k * W, cached fe epochs)
    peak RSS (MB)     ~ c + d * P + g * N + s * B * T * L * H

The second time term, `e`, is the work that grows with the width rather than its square (attention
over the sequence, layer norms, activations, the overhead that makes a narrow encoder's small matrix
products slower per FLOP): with `b` alone, a 12 x 768 encoder costs 8x a 6 x 384 one per wordpiece,
where MPNet's SICK-E ft, LoRA and BitFit epochs cost about 7x MiniLM's (bench/README.md, "MPNet").
Runs of two or more widths tell `b` from `e`; an entry fitted on one width has `e` None, and
extrapolates to other widths by `H^2`. A cached fe epoch after the first runs no encoder: its cost
is the head's, `k` per wordpiece, and reading and mixing each wordpiece's L x H features, `e` (with
`b` = 0); its first epoch is such an epoch plus the encoder's pass, so its `first_k` is `k` and its
`first_b`, `first_e` add the pass's terms.

The per-instance term `g` is there because the loaded dataset grows the process
(bench/README.md). The last memory term is the longest batch's activations: `B` the batch size
and `T` the most wordpieces one train instance puts through the encoder (`DataCount.longest`),
so `B * T` wordpieces, each with L x H features kept for the backward pass (and, in fe, the
features the head reads). Without it, the plan was 15-48% under MRPC's peaks (pairs twice
SICK-E's length; bench/README.md, "Peak RAM and sequence length").

For a cached `fe` run the first epoch is apart, `first_a + first_b * W * L * H^2 + first_e * W *
L * H`, with `a`, `b` and `e` then the epochs after it: the first epoch runs the encoder and
stores the features, the later ones only read them.

A key is a mode (`"fe"`) or a mode and a task head (`"fe/tune_bcn"`, the model's registered
type); the planner prefers the head's entry, because a cached fe epoch is mostly the head's
work, which `W * L * H^2` does not see.

It is a CPU estimate (`torch` with two threads, `cuda_device: -1`), and a rough one: it knows
the encoder's work but not the task head's nor the validation data's, and its entries without
`e` were fitted on one encoder, whose cost per unit of work they extrapolate to the others. Read
its numbers as orders of magnitude; bench/README.md compares the estimates with full-size runs.
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
        Seconds per epoch `a + b * W * L * H^2 (+ e * W * L * H)`; for a cached fe entry, the
        epochs after the first. `b` None: no time estimate.
    c, d : `Optional[float]`
        Peak RSS MB `c + d * P` (plus `g * N` and `s * B * T * L * H`). `d` None: no memory
        estimate.
    runs : `int`
        How many runs the entry was fitted on.
    fitted_on : `str`
        Those runs, as `config/seed` names.
    first_a, first_b : `Optional[float]`
        A cached fe run's first epoch (encoder run, features stored); None for every other
        entry.
    g : `Optional[float]`
        Peak RSS MB per train instance; None where the runs did not tell it.
    e, first_e : `Optional[float]`
        Seconds per unit of `W * L * H` (every epoch, or a cached run's later epochs; its first
        epoch); None where the runs had one width, so that only `b` could be told.
    k, first_k : `Optional[float]`
        Seconds per wordpiece of a cached fe run's epochs (later; first), the head's work;
        None for other entries.
    s : `Optional[float]`
        Peak RSS MB per unit of the longest batch's activations, `B * T * L * H` (module
        docstring); None where the runs did not tell it (all of one length).
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
    e: Optional[float] = None
    first_e: Optional[float] = None
    k: Optional[float] = None
    first_k: Optional[float] = None
    s: Optional[float] = None

    def epoch_seconds(
        self,
        work: Optional[float],
        linear_work: Optional[float] = None,
        wordpieces: Optional[float] = None,
    ) -> Optional[float]:
        """
        Seconds of one epoch (a cached fe run: of a later one) for `work` = W x L x H^2,
        `linear_work` = W x L x H and `wordpieces` = W (the last two needed where the entry
        has `e` or `k`).
        """
        if self.b is None or work is None:
            return None
        return _seconds(self.a, self.b, self.e, self.k, work, linear_work, wordpieces)

    def first_epoch_seconds(
        self,
        work: Optional[float],
        linear_work: Optional[float] = None,
        wordpieces: Optional[float] = None,
    ) -> Optional[float]:
        """Seconds of a cached fe run's first epoch, None for an entry without one."""
        if self.first_b is None or work is None:
            return None
        terms = (self.first_a, self.first_b, self.first_e, self.first_k)
        return _seconds(*terms, work, linear_work, wordpieces)

    def peak_rss_mb(
        self,
        params: Optional[int],
        instances: Optional[int] = None,
        activations: Optional[float] = None,
    ) -> Optional[float]:
        """Peak RSS in MB of a run of an encoder of `params` parameters on `instances`, whose
        longest batch has `activations` = B x T x L x H."""
        if self.d is None or params is None:
            return None
        per_instance = (self.g or 0.0) * instances if instances is not None else 0.0
        longest = (self.s or 0.0) * activations if activations is not None else 0.0
        return (self.c or 0.0) + self.d * params + per_instance + longest


def _seconds(
    a: Optional[float],
    b: float,
    e: Optional[float],
    k: Optional[float],
    work: float,
    linear_work: Optional[float],
    wordpieces: Optional[float],
) -> float:
    """`a + b * work + e * linear_work + k * wordpieces`, a missing term counting 0."""
    extra = (e or 0.0) * (linear_work or 0.0) + (k or 0.0) * (wordpieces or 0.0)
    return (a or 0.0) + b * work + extra


# Fitted with `fit.fit_cost_model` on this machine (2 CPU cores, no GPU) to MiniLM
# (all-MiniLM-L6-v2: L = 6, H = 384, P = 22,565,376) runs, then pasted from
# `format_cost_model(...)`; where `P` never varies, `c` is BASE_RSS_MB and `d` scales MiniLM's
# memory to other encoders. That scaling put MPNet (P = 108,895,488) at 5.9-7.1 GB where its
# SICK-E runs peaked at 2.8-4.6 GB (bench/README.md, "MPNet"), so the fe, ft, lora and bitfit
# entries' c and d now go through one run of each encoder (SICK-E, N = 4,439). Their times
# (a, b, e, k and the first epoch's) were refitted the same way, to one session's SICK-E runs of
# both encoders (2026-11-30, the idle machine; bench/README.md "The time terms refitted"):
# `fit_cost_model` over runs/refit/{minilm,mpnet}{,_fe}/sick_e_*/seed_1 (fe 2 epochs, lora and
# bitfit 1) and MPNet's ft runs of docs/results/NOTEBOOK.md section 15 (3.5e-5 x 5, seeds 2 and 3).
# The W x L x H^2 term alone, fitted on MiniLM, had put MPNet's epochs at 3-20 times what they
# took. "sf" and the head entries below keep MiniLM's times alone. The same four entries' memory
# terms (c, d and the longest batch's s; g as given) were then fitted to both encoders' peaks on
# SICK-E and MRPC, whose pairs are twice as long (`fit_cost_model(runs, per_instance={mode: g})`
# over runs/refit/*/{sick_e,mrpc}_*/seed_1 and the full-recipe runs of docs/results/NOTEBOOK.md
# section 15, each seed a point; bench/README.md "Peak RAM and sequence length").
# - "sf" and "fe/tune_bcn", and the g of "ft", "bitfit" and "lora": the growth bench
#   (bench/bench_growth.py, bench/README.md): `sst2_bert_<mode>` on the first 1k, 4k, 16k and
#   all 67,349 SST-2 sentences, each alone on the idle machine, with its own feature cache
#   (REFIT: `fit_cost_model(sorted(Path("runs/growth").glob("n_*/<mode>/*/seed_1")))`).
#   The line through fe's cached epochs had a negative intercept, so a = 0 (the mean cost per
#   unit of work).
# - "fe/tune_tagger", "ft/tune_tagger": the full CoNLL-2003 runs of docs/results/NOTEBOOK.md
#   section 12 (one run each: they reproduce those cells, scaled by W x L x H^2).
COST_MODEL: Dict[str, ModeCost] = {
    # (pooled, for heads without an entry: the pair tasks' ESIM) time: sick_e_minilm_fe and
    # sick_e_mpnet_fe, 2 epochs each (later epochs 25.6 and 30.7 s, the first 42.7 and 149.0 s);
    # RAM: c, d and s through both encoders' fe peaks on SICK-E and MRPC (10 runs, below)
    "fe": ModeCost(
        a=0.0,
        b=0.0,
        c=1682.43,
        d=5.43269e-06,
        s=3.98392e-05,
        first_a=0.0,
        first_b=1.23843e-10,
        e=5.34635e-09,
        first_e=3.01806e-08,
        k=0.000237263,
        first_k=0.000237263,
        runs=2,
    ),
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
    # time: sick_e_minilm_ft (1 epoch, 54.5 s) and sick_e_mpnet_ft seeds 2 and 3 (380.1 and
    # 365.7 s); RAM: c, d and s through both encoders' ft peaks on SICK-E and MRPC (9 runs),
    # g as fitted on the growth bench (sst2_bert_ft at 1k, 4k, 16k and 67,349 sentences)
    "ft": ModeCost(
        a=0.0,
        b=3.83837e-10,
        c=1240.86,
        d=6.29186e-06,
        g=0.00787388,
        e=8.31595e-08,
        s=0.000182882,
        runs=3,
    ),
    # conll2003_bert_ft/seed_1
    "ft/tune_tagger": ModeCost(a=0.0, b=1.86579e-09, c=890.0, d=0.000114259, runs=1),
    # the growth bench at 1k, 4k, 16k and 67,349 sentences (3 epochs, the first frozen: their
    # mean)
    "sf": ModeCost(a=0.243967, b=1.28005e-09, c=890.0, d=6.74168e-05, g=0.0107354, runs=4),
    # time: sick_e_minilm_bitfit and sick_e_mpnet_bitfit, 1 epoch each (35.5, 245.1 s); RAM:
    # c, d and s through their peaks and MiniLM's MRPC BitFit peak (1708.3, 3405.5, 2422.9 MB;
    # d comes out 0: two encoders, whose P and L x H grow together), g as fitted on the growth
    # bench
    "bitfit": ModeCost(
        a=0.0, b=2.56173e-10, c=1248.47, d=0.0, g=0.00809187, e=5.1684e-08, s=0.000131014, runs=2
    ),
    # time: sick_e_minilm_lora and sick_e_mpnet_lora (r 8, query / value), 1 epoch each (37.9,
    # 253.5 s); RAM: c, d and s through both encoders' LoRA peaks on SICK-E and MRPC (7 runs; d
    # comes out 0, as BitFit's), g as fitted on the growth bench
    "lora": ModeCost(
        a=0.0, b=2.51377e-10, c=912.484, d=0.0, g=0.00897627, e=6.38506e-08, s=0.000202879, runs=2
    ),
}


__all__ = ["BASE_RSS_MB", "COST_MODEL", "ModeCost"]
