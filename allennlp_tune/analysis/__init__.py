"""
Where task information lives in an encoder (Peters, Ruder & Smith 2019, section 5): per-layer
pooled features (`features`), diagnostic classifiers (`probing`), the EDGE mutual information
estimator, plain and projected (`edge`), with the probe's variational bound, control tasks and
MDL probing in `probing`, and per-layer plots (`plots`). The `allennlp probe` and `allennlp mi`
subcommands in `allennlp_tune.commands` put them together.
"""

from allennlp_tune.analysis.edge import (
    discretise_scores,
    edge_mutual_information,
    edge_projected_mutual_information,
)

__all__ = [
    "discretise_scores",
    "edge_mutual_information",
    "edge_projected_mutual_information",
]
