"""Tiny random model fixtures: a BERT (cased and uncased) and an ELMo in AllenNLP's format.

    from fixture_models import make_model_fixtures
    make_model_fixtures(Path("fixtures/models"), words)

Writes, deterministically (fixed seeds, no timestamps):

- `bert-cased/`, `bert-uncased/`: a 4-layer BERT with hidden size 16 (`config.json`, the
  weights as `model.safetensors` and `pytorch_model.bin`, see `save_weights`) and a
  `BertTokenizerFast` (`vocab.txt`, `tokenizer.json`, `tokenizer_config.json`,
  `special_tokens_map.json`) whose wordpiece vocabulary covers `words`,
  so the directory path works as `model_name` for `AutoModel`/`AutoTokenizer` and AllenNLP's
  pretrained-transformer tokenizer, indexers and embedders, offline.
- `elmo/options.json`, `elmo/weights.hdf5`: a tiny bidirectional LM in bilm-tf's layout, loadable
  by `allennlp.modules.elmo.Elmo` (output dim 16 = 2 * projection_dim 8).
- one folder per other encoder family users bring (`FAMILIES`): `roberta/`, `xlm-roberta/`,
  `deberta-v2/`, `electra/`, `distilbert/`, `albert/`, `mpnet/`. Each is a tiny random model of
  that family (hidden size 16, 2 or 3 layers) with the family's fast tokenizer, built with the
  `tokenizers` library over `words`: WordPiece (DistilBERT, ELECTRA, MPNet), byte-level BPE
  (RoBERTa) or a sentencepiece-style Unigram model (ALBERT, DeBERTa-v2, XLM-R), with the
  family's special tokens, normalisation and pair layout. ALBERT shares one set of layer
  weights among its 3 layers (`num_hidden_groups: 1`), as every published ALBERT does; ELECTRA
  and ALBERT project a smaller embedding (8) to the hidden size.
- `mpnet-sentence/` (`SENTENCE_MODELS`): an MPNet (hidden size 32, 2 layers) laid out as the
  sentence-transformers checkpoint all-mpnet-base-v2, with `modules.json` and
  `1_Pooling/config.json` (mean pooling) beside the transformers files.
- the families only newer transformers have (`VERSIONED`), where the installed transformers has
  them: `modernbert/` (>= 4.48), 3 layers, global and local attention, byte-level BPE with
  BERT's special tokens. On older stacks they are skipped with a logged reason, so the committed
  `fixtures/models` (written on the locked stack) lacks them and tests build them when they can.

Runs on the locked stack (transformers 4.43, tokenizers 0.19) and on a stock AllenNLP 2.10.1
environment (transformers 4.20, tokenizers 0.12), and writes files both read: the weights in
both formats where the installed transformers can write them, and the sentencepiece families'
`Metaspace` steps in the form every tokenizers version reads (`legacy_metaspace`). Also runs on
transformers 5 (which writes only `model.safetensors`).
"""

import inspect
import json
import logging
import string
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import h5py
import numpy
import torch
from tokenizers import (
    AddedToken,
    Regex,
    Tokenizer,
    decoders,
    models,
    normalizers,
    pre_tokenizers,
    processors,
)
from transformers import (
    AlbertConfig,
    AlbertTokenizerFast,
    AutoModel,
    BertConfig,
    BertModel,
    BertTokenizerFast,
    DebertaV2Config,
    DebertaV2TokenizerFast,
    DistilBertConfig,
    DistilBertTokenizerFast,
    ElectraConfig,
    ElectraTokenizerFast,
    MPNetConfig,
    MPNetTokenizerFast,
    PretrainedConfig,
    PreTrainedTokenizerFast,
    RobertaConfig,
    RobertaTokenizerFast,
    XLMRobertaConfig,
    XLMRobertaTokenizerFast,
)

logger = logging.getLogger(__name__)

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


def wordpiece_vocab(
    words: List[str], lowercase: bool, special_tokens: Sequence[str] = SPECIAL_TOKENS
) -> List[str]:
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
    pieces -= set(special_tokens)
    characters = sorted({char for piece in pieces for char in piece})
    whole = sorted(pieces)
    vocab = list(special_tokens) + whole
    vocab += [char for char in characters if char not in set(whole)]
    vocab += ["##" + char for char in characters]
    return vocab


def _wordpiece_vocab_argument(tokenizer_class, vocab_file: Path, vocab: List[str]) -> Dict:
    """
    How `tokenizer_class` takes its WordPiece vocabulary: `vocab_file` (transformers < 5), or
    `vocab`, the token -> id mapping (transformers 5, which ignores a `vocab_file`).
    """
    if "vocab_file" in inspect.signature(tokenizer_class.__init__).parameters:
        return {"vocab_file": str(vocab_file)}
    return {"vocab": {token: index for index, token in enumerate(vocab)}}


def write_bert(out_dir: Path, words: List[str], lowercase: bool) -> None:
    """Save a tiny random `BertModel` and its tokenizer to `out_dir`."""
    out_dir.mkdir(parents=True, exist_ok=True)
    vocab = wordpiece_vocab(words, lowercase)
    vocab_file = out_dir / "vocab.txt"
    vocab_file.write_text("".join(token + "\n" for token in vocab), encoding="utf-8")
    tokenizer = BertTokenizerFast(
        **_wordpiece_vocab_argument(BertTokenizerFast, vocab_file, vocab),
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
    save_weights(model, out_dir)


def save_weights(model: torch.nn.Module, out_dir: Path) -> None:
    """
    `config.json` and the weights in every format the installed transformers writes:
    `model.safetensors` (transformers >= 4.35 reads it first) and `pytorch_model.bin` (the only
    format transformers 4.20, the stock AllenNLP 2.10.1 stack, reads). Both hold the same
    tensors. Transformers without `safe_serialization` writes its one format: the `.bin` file
    (< 4.21) or `model.safetensors` (>= 5, which reads and writes nothing else).
    """
    safetensors = out_dir / "model.safetensors"
    if "safe_serialization" not in inspect.signature(model.save_pretrained).parameters:
        model.save_pretrained(str(out_dir))
        if safetensors.is_file():
            safetensors.chmod(0o644)
        return
    model.save_pretrained(str(out_dir), safe_serialization=True)
    # safetensors creates its file with mode 0600; match the other files.
    safetensors.chmod(0o644)
    # Saving again in the other format leaves model.safetensors where it is (transformers
    # removes only older files of the format it writes).
    model.save_pretrained(str(out_dir), safe_serialization=False)


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


# ---- the other encoder families ------------------------------------------------------------

# Shared by every family: hidden size 16, 2 layers, 2 heads, feed-forward 32, BERT's dropout.
TINY = dict(
    hidden_size=16,
    num_hidden_layers=2,
    num_attention_heads=2,
    intermediate_size=32,
    hidden_dropout_prob=0.1,
    attention_probs_dropout_prob=0.1,
)
# RoBERTa, XLM-R and MPNet number positions from pad_token_id + 1: two more position rows.
OFFSET_POSITIONS = MAX_LENGTH + 2
SPM_SPACE = "\u2581"  # sentencepiece's word-start mark


def _save_model(out_dir: Path, config: PretrainedConfig) -> None:
    torch.manual_seed(SEED)
    model = AutoModel.from_config(config)
    model.eval()
    save_weights(model, out_dir)


def _metaspace(module):
    """`module.Metaspace` (pre-tokenizer or decoder) marking and splitting at every word start."""
    try:  # tokenizers >= 0.15
        return module.Metaspace(replacement=SPM_SPACE, prepend_scheme="always")
    except TypeError:  # older: the same behaviour, spelled add_prefix_space
        return module.Metaspace(replacement=SPM_SPACE, add_prefix_space=True)


def legacy_metaspace(tokenizer_json: Path) -> None:
    """
    Rewrites the `Metaspace` pre-tokenizer and decoder of a saved `tokenizer.json` in the form
    that tokenizers < 0.14 writes, `{"add_prefix_space": true}`: tokenizers 0.12 (transformers
    4.20) cannot parse the newer `{"prepend_scheme": "always", "split": true}`, and newer
    versions read the old form as exactly that. Other files are left as they are.
    """
    data = json.loads(tokenizer_json.read_text(encoding="utf-8"))
    changed = False
    for key in ("pre_tokenizer", "decoder"):
        step = data.get(key)
        if isinstance(step, dict) and step.get("type") == "Metaspace":
            assert step.get("prepend_scheme", "always") == "always" and step.get("split", True)
            data[key] = {"type": "Metaspace", "replacement": SPM_SPACE, "add_prefix_space": True}
            changed = changed or data[key] != step
    if changed:
        tokenizer_json.write_text(
            json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
        )


def _save_tokenizer(out_dir: Path, tokenizer: PreTrainedTokenizerFast) -> None:
    tokenizer.save_pretrained(str(out_dir))
    legacy_metaspace(out_dir / "tokenizer.json")


def _wordpiece_tokenizer(
    out_dir: Path, words: List[str], tokenizer_class, special_tokens: Sequence[str]
) -> Tuple[PreTrainedTokenizerFast, int]:
    """An uncased WordPiece tokenizer of `tokenizer_class` (BERT's normaliser and pieces)."""
    vocab = wordpiece_vocab(words, lowercase=True, special_tokens=special_tokens)
    vocab_file = out_dir / "vocab.txt"
    vocab_file.write_text("".join(token + "\n" for token in vocab), encoding="utf-8")
    tokenizer = tokenizer_class(
        **_wordpiece_vocab_argument(tokenizer_class, vocab_file, vocab),
        do_lower_case=True,
        model_max_length=MAX_LENGTH,
    )
    return tokenizer, len(vocab)


def _byte_level_bpe(
    words: List[str],
    first_tokens: Sequence[str] = ("<s>", "<pad>", "</s>", "<unk>"),
    last_tokens: Sequence[str] = ("<mask>",),
) -> Tuple[Dict[str, int], List[Tuple[str, str]]]:
    """
    A byte-level BPE vocabulary: `first_tokens`, the 256 byte symbols, one token per prefix of
    every word (with and without the leading-space mark `Ġ`), `last_tokens` (RoBERTa's by
    default: `<s> <pad> </s> <unk>` first, `<mask>` last); and the merges that build each word
    left to right. The merges of `Ġ`-words come first, so a word after a space always becomes
    one token; other text falls back to shorter pieces or bytes.
    """
    pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    pieces = set()
    for word in list(words) + list(BASE_CHARACTERS):
        for text in (" " + word, word):
            pieces.update(piece for piece, _ in pre_tokenizer.pre_tokenize_str(text))
    spaced = sorted(piece for piece in pieces if piece.startswith("\u0120"))
    bare = sorted(piece for piece in pieces if not piece.startswith("\u0120"))
    tokens = list(first_tokens) + sorted(pre_tokenizers.ByteLevel.alphabet())
    merges: List[Tuple[str, str]] = []
    known = set(tokens)
    for piece in spaced + bare:
        for end in range(2, len(piece) + 1):
            if piece[:end] not in known:
                known.add(piece[:end])
                tokens.append(piece[:end])
                merges.append((piece[: end - 1], piece[end - 1]))
    tokens += list(last_tokens)
    return {token: index for index, token in enumerate(tokens)}, merges


def _unigram_vocab(
    words: List[str], special_tokens: Sequence[str], normalize: Callable[[str], str]
) -> List[Tuple[str, float]]:
    """
    A sentencepiece-style Unigram vocabulary: the special tokens (score 0), every word as one
    `▁word` piece (-1), `▁` + every character (-6), every character (-8), `▁` (-9). The best
    segmentation of a fixture word is the word itself; any other text splits into characters.
    """
    metaspace = _metaspace(pre_tokenizers)
    pieces = set()
    for word in words:
        pieces.update(piece for piece, _ in metaspace.pre_tokenize_str(normalize(word)))
    characters = sorted(
        {char for piece in pieces for char in piece if char != SPM_SPACE}
        | set(normalize(BASE_CHARACTERS))
    )
    vocab = [(token, 0.0) for token in special_tokens]
    seen = set(special_tokens)

    def add(piece: str, score: float) -> None:
        if piece not in seen:
            seen.add(piece)
            vocab.append((piece, score))

    for piece in sorted(pieces):
        add(piece, -1.0)
    for char in characters:
        add(SPM_SPACE + char, -6.0)
    for char in characters:
        add(char, -8.0)
    add(SPM_SPACE, -9.0)
    return vocab


def _unigram_tokenizer(
    words: List[str],
    special_tokens: Sequence[str],
    unk_token: str,
    normalizer: normalizers.Normalizer,
    post_processor: Callable[[Dict[str, int]], processors.PostProcessor],
    last_tokens: Sequence[str] = (),
) -> Tokenizer:
    """A `tokenizers` Unigram tokenizer as transformers' sentencepiece converters build it."""
    vocab = _unigram_vocab(words, special_tokens, normalizer.normalize_str)
    vocab += [(token, 0.0) for token in last_tokens]
    ids = {piece: index for index, (piece, _) in enumerate(vocab)}
    try:
        unigram = models.Unigram(vocab, unk_id=ids[unk_token], byte_fallback=False)
    except TypeError:  # tokenizers < 0.14 has no byte fallback (the same as False)
        unigram = models.Unigram(vocab, unk_id=ids[unk_token])
    tokenizer = Tokenizer(unigram)
    tokenizer.normalizer = normalizer
    tokenizer.pre_tokenizer = _metaspace(pre_tokenizers)
    tokenizer.decoder = _metaspace(decoders)
    tokenizer.post_processor = post_processor(ids)
    return tokenizer


def _bert_style_pair(ids: Dict[str, int]) -> processors.PostProcessor:
    """`[CLS] A [SEP] B [SEP]` with type ids 0 / 1 (ALBERT, DeBERTa-v2)."""
    return processors.TemplateProcessing(
        single="[CLS]:0 $A:0 [SEP]:0",
        pair="[CLS]:0 $A:0 [SEP]:0 $B:1 [SEP]:1",
        special_tokens=[("[CLS]", ids["[CLS]"]), ("[SEP]", ids["[SEP]"])],
    )


def _roberta_style_pair(ids: Dict[str, int]) -> processors.PostProcessor:
    """`<s> A </s></s> B </s>`, every type id 0 (XLM-R)."""
    return processors.TemplateProcessing(
        single="<s> $A </s>",
        pair="<s> $A </s> </s> $B </s>",
        special_tokens=[("<s>", ids["<s>"]), ("</s>", ids["</s>"])],
    )


def write_roberta(out_dir: Path, words: List[str]) -> None:
    """RoBERTa: byte-level BPE, positions offset by the padding id, one token type."""
    vocab, merges = _byte_level_bpe(words)
    backend = Tokenizer(models.BPE(vocab=vocab, merges=merges, fuse_unk=False))
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    # (sep, cls) positionally: tokenizers 0.23 renamed `cls` to `cls_token`.
    backend.post_processor = processors.RobertaProcessing(
        ("</s>", vocab["</s>"]), ("<s>", vocab["<s>"]), trim_offsets=True
    )
    tokenizer = RobertaTokenizerFast(tokenizer_object=backend, model_max_length=MAX_LENGTH)
    _save_tokenizer(out_dir, tokenizer)
    config = RobertaConfig(
        vocab_size=len(vocab),
        max_position_embeddings=OFFSET_POSITIONS,
        type_vocab_size=1,
        pad_token_id=1,
        bos_token_id=0,
        eos_token_id=2,
        **TINY,
    )
    _save_model(out_dir, config)


def write_xlm_roberta(out_dir: Path, words: List[str]) -> None:
    """XLM-R: RoBERTa's model with a cased sentencepiece (Unigram) vocabulary."""
    normalizer = normalizers.Sequence(
        [normalizers.Strip(left=False, right=True), normalizers.Replace(Regex(" {2,}"), SPM_SPACE)]
    )
    backend = _unigram_tokenizer(
        words,
        ["<s>", "<pad>", "</s>", "<unk>"],
        "<unk>",
        normalizer,
        _roberta_style_pair,
        last_tokens=["<mask>"],
    )
    tokenizer = XLMRobertaTokenizerFast(tokenizer_object=backend, model_max_length=MAX_LENGTH)
    _save_tokenizer(out_dir, tokenizer)
    config = XLMRobertaConfig(
        vocab_size=backend.get_vocab_size(),
        max_position_embeddings=OFFSET_POSITIONS,
        type_vocab_size=1,
        pad_token_id=1,
        bos_token_id=0,
        eos_token_id=2,
        **TINY,
    )
    _save_model(out_dir, config)


def write_deberta_v2(out_dir: Path, words: List[str]) -> None:
    """DeBERTa-v2 as DeBERTa-v3 configures it: relative positions only, no token types."""
    normalizer = normalizers.Sequence(
        [normalizers.Strip(), normalizers.Replace(Regex(" {2,}"), " ")]
    )
    backend = _unigram_tokenizer(
        words,
        ["[PAD]", "[CLS]", "[SEP]", "[UNK]"],
        "[UNK]",
        normalizer,
        _bert_style_pair,
        last_tokens=["[MASK]"],
    )
    tokenizer = DebertaV2TokenizerFast(
        tokenizer_object=backend, do_lower_case=False, model_max_length=MAX_LENGTH
    )
    _save_tokenizer(out_dir, tokenizer)
    config = DebertaV2Config(
        vocab_size=backend.get_vocab_size(),
        max_position_embeddings=MAX_LENGTH,
        type_vocab_size=0,
        relative_attention=True,
        max_relative_positions=-1,
        position_buckets=8,
        position_biased_input=False,
        pos_att_type=["p2c", "c2p"],
        norm_rel_ebd="layer_norm",
        share_att_key=True,
        pad_token_id=0,
        **TINY,
    )
    _save_model(out_dir, config)


def write_albert(out_dir: Path, words: List[str]) -> None:
    """ALBERT: uncased Unigram vocabulary; 3 layers sharing one set of weights."""
    normalizer = normalizers.Sequence(
        [
            normalizers.Replace("``", '"'),
            normalizers.Replace("''", '"'),
            normalizers.NFKD(),
            normalizers.StripAccents(),
            normalizers.Lowercase(),
            normalizers.Replace(Regex(" {2,}"), " "),
        ]
    )
    backend = _unigram_tokenizer(
        words, ["<pad>", "<unk>", "[CLS]", "[SEP]", "[MASK]"], "<unk>", normalizer, _bert_style_pair
    )
    tokenizer = AlbertTokenizerFast(
        tokenizer_object=backend,
        do_lower_case=True,
        keep_accents=False,
        model_max_length=MAX_LENGTH,
    )
    _save_tokenizer(out_dir, tokenizer)
    config = AlbertConfig(
        vocab_size=backend.get_vocab_size(),
        embedding_size=8,
        max_position_embeddings=MAX_LENGTH,
        type_vocab_size=2,
        num_hidden_groups=1,
        inner_group_num=1,
        pad_token_id=0,
        bos_token_id=2,
        eos_token_id=3,
        **dict(TINY, num_hidden_layers=3),
    )
    _save_model(out_dir, config)


def write_electra(out_dir: Path, words: List[str]) -> None:
    """ELECTRA's discriminator: BERT's WordPiece, embeddings 8 projected to the hidden size."""
    tokenizer, vocab_size = _wordpiece_tokenizer(
        out_dir, words, ElectraTokenizerFast, SPECIAL_TOKENS
    )
    _save_tokenizer(out_dir, tokenizer)
    config = ElectraConfig(
        vocab_size=vocab_size,
        embedding_size=8,
        max_position_embeddings=MAX_LENGTH,
        type_vocab_size=2,
        pad_token_id=0,
        **TINY,
    )
    _save_model(out_dir, config)


def write_distilbert(out_dir: Path, words: List[str]) -> None:
    """DistilBERT: BERT's WordPiece; no token type embeddings and no `token_type_ids` input."""
    tokenizer, vocab_size = _wordpiece_tokenizer(
        out_dir, words, DistilBertTokenizerFast, SPECIAL_TOKENS
    )
    _save_tokenizer(out_dir, tokenizer)
    config = DistilBertConfig(
        vocab_size=vocab_size,
        max_position_embeddings=MAX_LENGTH,
        n_layers=TINY["num_hidden_layers"],
        n_heads=TINY["num_attention_heads"],
        dim=TINY["hidden_size"],
        hidden_dim=TINY["intermediate_size"],
        dropout=0.1,
        attention_dropout=0.1,
        pad_token_id=0,
    )
    _save_model(out_dir, config)


def write_mpnet(out_dir: Path, words: List[str]) -> None:
    """MPNet: WordPiece with `<s>`/`</s>` specials, relative position buckets, no token types."""
    tokenizer, vocab_size = _wordpiece_tokenizer(
        out_dir, words, MPNetTokenizerFast, ["<s>", "<pad>", "</s>", "[UNK]", "<mask>"]
    )
    _save_tokenizer(out_dir, tokenizer)
    config = MPNetConfig(
        vocab_size=vocab_size,
        max_position_embeddings=OFFSET_POSITIONS,
        relative_attention_num_buckets=32,  # MPNet's position bias assumes 32
        pad_token_id=1,
        bos_token_id=0,
        eos_token_id=2,
        **TINY,
    )
    _save_model(out_dir, config)


# sentence-transformers' description of a checkpoint: its modules in order (the transformer in
# the folder itself, then mean pooling, then L2 normalisation, which has no folder of its own).
SENTENCE_TRANSFORMERS_MODULES = [
    {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
    {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
    {
        "idx": 2,
        "name": "2",
        "path": "2_Normalize",
        "type": "sentence_transformers.models.Normalize",
    },
]


def _write_json(path: Path, data) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


def write_mpnet_sentence(out_dir: Path, words: List[str]) -> None:
    """
    MPNet laid out as the sentence-transformers checkpoint all-mpnet-base-v2 is (what
    `allennlp tune-data fetch mpnet` unpacks): the transformers files (`config.json`, the
    weights, `tokenizer.json`, `vocab.txt`, ...) plus `modules.json`, `sentence_bert_config.json`
    and `1_Pooling/config.json` with mean pooling. A wider model than `mpnet/` (hidden size 32,
    4 heads, feed-forward 64, 2 layers) with the published layer norm epsilon (1e-5) and 32
    relative position buckets.
    """
    tokenizer, vocab_size = _wordpiece_tokenizer(
        out_dir, words, MPNetTokenizerFast, ["<s>", "<pad>", "</s>", "[UNK]", "<mask>"]
    )
    _save_tokenizer(out_dir, tokenizer)
    hidden_size = 32
    config = MPNetConfig(
        vocab_size=vocab_size,
        max_position_embeddings=OFFSET_POSITIONS,
        relative_attention_num_buckets=32,
        layer_norm_eps=1e-5,
        pad_token_id=1,
        bos_token_id=0,
        eos_token_id=2,
        **dict(TINY, hidden_size=hidden_size, num_attention_heads=4, intermediate_size=64),
    )
    _save_model(out_dir, config)
    _write_json(out_dir / "modules.json", SENTENCE_TRANSFORMERS_MODULES)
    _write_json(
        out_dir / "sentence_bert_config.json",
        {"max_seq_length": MAX_LENGTH, "do_lower_case": False},
    )
    _write_json(
        out_dir / "1_Pooling" / "config.json",
        {
            "word_embedding_dimension": hidden_size,
            "pooling_mode_cls_token": False,
            "pooling_mode_mean_tokens": True,
            "pooling_mode_max_tokens": False,
            "pooling_mode_mean_sqrt_len_tokens": False,
        },
    )


def write_modernbert(out_dir: Path, words: List[str]) -> None:
    """
    ModernBERT (transformers >= 4.48) as published: byte-level BPE with BERT's special tokens
    and pair layout (`[CLS] A [SEP] B [SEP]`) and no `token_type_ids` input; rotary positions,
    a layer list `layers` whose first layer has no attention norm, a `final_norm` above it, no
    bias anywhere; 3 layers, the first with global attention and the others with a local
    window of 8 tokens (`global_attn_every_n_layers: 3`, `local_attention: 8`).
    """
    from transformers import ModernBertConfig  # not in transformers < 4.48: see VERSIONED

    special = ["[UNK]", "[CLS]", "[SEP]", "[PAD]", "[MASK]"]  # after the BPE tokens, as published
    vocab, merges = _byte_level_bpe(
        words, first_tokens=["<|endoftext|>", "<|padding|>"], last_tokens=special
    )
    backend = Tokenizer(models.BPE(vocab=vocab, merges=merges, fuse_unk=False))
    backend.normalizer = normalizers.NFC()
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    backend.decoder = decoders.ByteLevel()
    backend.post_processor = _bert_style_pair(vocab)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend,
        unk_token="[UNK]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        pad_token="[PAD]",
        mask_token=AddedToken("[MASK]", lstrip=True, rstrip=False),
        model_input_names=["input_ids", "attention_mask"],
        clean_up_tokenization_spaces=True,
        model_max_length=MAX_LENGTH,
    )
    _save_tokenizer(out_dir, tokenizer)
    config = ModernBertConfig(
        vocab_size=len(vocab),
        hidden_size=TINY["hidden_size"],
        num_hidden_layers=3,
        num_attention_heads=TINY["num_attention_heads"],
        intermediate_size=TINY["intermediate_size"],
        max_position_embeddings=MAX_LENGTH,
        global_attn_every_n_layers=3,
        local_attention=8,
        pad_token_id=vocab["[PAD]"],
        bos_token_id=vocab["[CLS]"],
        eos_token_id=vocab["[SEP]"],
        cls_token_id=vocab["[CLS]"],
        sep_token_id=vocab["[SEP]"],
        # transformers 4.48-4.5x may torch.compile parts of the model by default; 5 drops it.
        reference_compile=False,
    )
    _save_model(out_dir, config)


# folder -> writer; the folder is the name tests and TUNE_BERT_MODEL use.
FAMILIES: Dict[str, Callable[[Path, List[str]], None]] = {
    "roberta": write_roberta,
    "xlm-roberta": write_xlm_roberta,
    "deberta-v2": write_deberta_v2,
    "electra": write_electra,
    "distilbert": write_distilbert,
    "albert": write_albert,
    "mpnet": write_mpnet,
}


# Checkpoints laid out as sentence-transformers publishes them: folder -> writer.
SENTENCE_MODELS: Dict[str, Callable[[Path, List[str]], None]] = {
    "mpnet-sentence": write_mpnet_sentence,
}


# Families that only newer transformers have: folder -> (config class, first version, writer).
# Written where the installed transformers has them (`versioned_families`); `fixtures/models`,
# written on the locked stack (transformers 4.43), has none of them, so tests build them.
VERSIONED: Dict[str, Tuple[str, str, Callable[[Path, List[str]], None]]] = {
    "modernbert": ("ModernBertConfig", "4.48", write_modernbert),
}


def family_unavailable(family: str) -> Optional[str]:
    """Why the installed transformers cannot build `VERSIONED[family]`, or `None` if it can."""
    import transformers

    config_class, first_version, _ = VERSIONED[family]
    if hasattr(transformers, config_class):
        return None
    return (
        f"{family} needs transformers >= {first_version} ({config_class}); "
        f"this is transformers {transformers.__version__}"
    )


def versioned_families() -> Dict[str, Callable[[Path, List[str]], None]]:
    """The writers of the `VERSIONED` families the installed transformers has."""
    return {
        family: writer
        for family, (_, _, writer) in VERSIONED.items()
        if family_unavailable(family) is None
    }


def make_model_fixtures(out_dir: Path, words: List[str]) -> None:
    """
    Write `bert-cased/`, `bert-uncased/`, `elmo/`, `FAMILIES`, `SENTENCE_MODELS` and the
    `VERSIONED` families the installed transformers has under `out_dir`; the others are skipped
    with a logged reason.
    """
    out_dir = Path(out_dir)
    write_bert(out_dir / "bert-cased", words, lowercase=False)
    write_bert(out_dir / "bert-uncased", words, lowercase=True)
    write_elmo(out_dir / "elmo")
    for family, write in {**FAMILIES, **SENTENCE_MODELS}.items():
        (out_dir / family).mkdir(parents=True, exist_ok=True)
        write(out_dir / family, words)
    for family in VERSIONED:
        reason = family_unavailable(family)
        if reason is not None:
            logger.info("skipping the %s fixture: %s", family, reason)
    for family, write in versioned_families().items():
        (out_dir / family).mkdir(parents=True, exist_ok=True)
        write(out_dir / family, words)
