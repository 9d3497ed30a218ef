from allennlp_tune.data.data_collators.static_shapes import StaticShapesCollator  # noqa: F401
