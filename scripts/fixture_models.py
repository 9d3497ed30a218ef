"""Tiny random model fixtures: a BERT (cased and uncased) and an ELMo in AllenNLP's format.

    from fixture_models import make_model_fixtures
    make_model_fixtures(Path("fixtures/models"), words)

Writes, deterministically (fixed seeds, no timestamps):

- `bert-cased/`, `bert-uncased/`: a 4-layer BERT with hidden size 16 (`config.json`,
  `model.safetensors`) and a `BertTokenizerFast` (`vocab.txt`, `tokenizer.json`,
  `tokenizer_config.json`, `special_tokens_map.json`) whose wordpiece vocabulary covers `words`,
  so the directory path works as `model_name` for `AutoModel`/`AutoTokenizer` and AllenNLP's
  pretrained-transformer tokenizer, indexers and embedders, offline.
- `elmo/options.json`, `elmo/weights.hdf5`: a tiny bidirectional LM in bilm-tf's layout, loadable
  by `allennlp.modules.elmo.Elmo` (output dim 16 = 2 * projection_dim 8).
"""

import json
import string
from pathlib import Path
from typing import Dict, List

import h5py
import numpy
import torch
from tokenizers import normalizers, pre_tokenizers
from transformers import BertConfig, BertModel, BertTokenizerFast

SPECIAL_TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
# Always in the vocabulary: AllenNLP's tokenizer probes with "A", "a", "b", "1" and "2".
BASE_CHARACTERS = string.ascii_letters + string.digits
MAX_LENGTH = 64
SEED = 13

ELMO_OPTIONS: Dict = {
    "bidirectional": True,
    "char_cnn": {
        "activation": "relu",
        "embedding": {"dim": 4},
        "filters": [[1, 4], [2, 8], [3, 8]],
        "max_characters_per_token": 50,
        "n_characters": 262,
        "n_highway": 1,
    },
    "dropout": 0.1,
    "lstm": {
        "cell_clip": 3,
        "dim": 16,
        "n_layers": 2,
        "proj_clip": 3,
        "projection_dim": 8,
        "use_skip_connections": True,
    },
}


def wordpiece_vocab(words: List[str], lowercase: bool) -> List[str]:
    """Special tokens, then the sorted whole words, then every character and `##` + character.

    Words are normalised and split exactly as `BertTokenizerFast` does (lower-casing and accent
    stripping for the uncased model, splitting off punctuation), so each piece is in the vocab.
    """
    normalizer = normalizers.BertNormalizer(
        clean_text=True, handle_chinese_chars=True, strip_accents=None, lowercase=lowercase
    )
    pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    base = BASE_CHARACTERS.lower() if lowercase else BASE_CHARACTERS
    pieces = set()
    for word in list(words) + list(base):
        normalized = normalizer.normalize_str(word)
        pieces.update(piece for piece, _ in pre_tokenizer.pre_tokenize_str(normalized))
    pieces -= set(SPECIAL_TOKENS)
    characters = sorted({char for piece in pieces for char in piece})
    whole = sorted(pieces)
    vocab = SPECIAL_TOKENS + whole
    vocab += [char for char in characters if char not in set(whole)]
    vocab += ["##" + char for char in characters]
    return vocab


def write_bert(out_dir: Path, words: List[str], lowercase: bool) -> None:
    """Save a tiny random `BertModel` and its tokenizer to `out_dir`."""
    out_dir.mkdir(parents=True, exist_ok=True)
    vocab = wordpiece_vocab(words, lowercase)
    vocab_file = out_dir / "vocab.txt"
    vocab_file.write_text("".join(token + "\n" for token in vocab), encoding="utf-8")
    tokenizer = BertTokenizerFast(
        vocab_file=str(vocab_file),
        do_lower_case=lowercase,
        strip_accents=None,
        tokenize_chinese_chars=True,
        model_max_length=MAX_LENGTH,
    )
    tokenizer.save_pretrained(str(out_dir))

    config = BertConfig(
        vocab_size=len(vocab),
        hidden_size=16,
        num_hidden_layers=4,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=MAX_LENGTH,
        type_vocab_size=2,
        hidden_dropout_prob=0.1,
        attention_probs_dropout_prob=0.1,
        pad_token_id=0,
    )
    torch.manual_seed(SEED)
    model = BertModel(config)
    model.eval()
    model.save_pretrained(str(out_dir), safe_serialization=True)
    # safetensors creates its file with mode 0600; match the other files.
    (out_dir / "model.safetensors").chmod(0o644)


def _dataset(group: h5py.Group, name: str, data: numpy.ndarray) -> None:
    group.create_dataset(name, data=data.astype(numpy.float32), track_times=False)


def write_elmo(out_dir: Path) -> None:
    """Write `options.json` and `weights.hdf5` for a tiny random ELMo (bilm-tf dataset layout)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    options = ELMO_OPTIONS
    (out_dir / "options.json").write_text(
        json.dumps(options, indent=2, sort_keys=True) + "\n", encoding="utf-8"
    )
    rng = numpy.random.RandomState(SEED)

    def rand(*shape: int) -> numpy.ndarray:
        return rng.standard_normal(shape) * 0.1

    cnn = options["char_cnn"]
    char_dim = cnn["embedding"]["dim"]
    n_filters = sum(num for _, num in cnn["filters"])
    lstm = options["lstm"]
    cell, proj = lstm["dim"], lstm["projection_dim"]

    with h5py.File(out_dir / "weights.hdf5", "w", libver="earliest") as fout:
        # Row 0 (padding) is added by the loader, so n_characters - 1 rows.
        _dataset(fout, "char_embed", rand(cnn["n_characters"] - 1, char_dim))
        group = fout.create_group("CNN")
        for i, (width, num) in enumerate(cnn["filters"]):
            _dataset(group, f"W_cnn_{i}", rand(1, width, char_dim, num))
            _dataset(group, f"b_cnn_{i}", rand(num))
        for k in range(cnn["n_highway"]):
            group = fout.create_group(f"CNN_high_{k}")
            _dataset(group, "W_transform", rand(n_filters, n_filters))
            _dataset(group, "b_transform", rand(n_filters))
            _dataset(group, "W_carry", rand(n_filters, n_filters))
            _dataset(group, "b_carry", rand(n_filters))
        group = fout.create_group("CNN_proj")
        _dataset(group, "W_proj", rand(n_filters, proj))
        _dataset(group, "b_proj", rand(proj))
        for direction in range(2):
            rnn = fout.create_group(f"RNN_{direction}/RNN/MultiRNNCell")
            for layer in range(lstm["n_layers"]):
                cell_group = rnn.create_group(f"Cell{layer}/LSTMCell")
                # tf packs [input; recurrent] x [i, j, f, o] gates; every layer's input is proj.
                _dataset(cell_group, "W_0", rand(proj + proj, 4 * cell))
                _dataset(cell_group, "B", rand(4 * cell))
                _dataset(cell_group, "W_P_0", rand(cell, proj))


def make_model_fixtures(out_dir: Path, words: List[str]) -> None:
    """Write `bert-cased/`, `bert-uncased/` and `elmo/` under `out_dir` (see the module doc)."""
    out_dir = Path(out_dir)
    write_bert(out_dir / "bert-cased", words, lowercase=False)
    write_bert(out_dir / "bert-uncased", words, lowercase=True)
    write_elmo(out_dir / "elmo")
