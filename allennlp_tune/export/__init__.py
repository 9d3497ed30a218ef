"""
Exports of a trained run that leave AllenNLP (`allennlp tune-export`): the encoder as a
transformers folder or a peft LoRA adapter, the scalar-mix weights, the task head and a model
card. See `exporter.py` for the folder's layout.
"""

from allennlp_tune.export.exporter import ExportResult, export_archive

__all__ = ["ExportResult", "export_archive"]
