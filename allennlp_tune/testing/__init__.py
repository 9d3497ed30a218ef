"""Test support shipped with the package (like `allennlp.common.testing`); not imported by
default."""

from allennlp_tune.testing.toy_layered_embedder import ToyLayeredEmbedder  # noqa: F401
