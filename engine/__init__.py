"""bpe-tui's headless engine: byte-level BPE, WordPiece and Unigram, trained, encoding and on file.

Imports only the standard library and ``regex``; its hot loops are compiled C modules of
its own (``engine/*/_*.c``). The public names below are imported when first used, so that a
training run does not load the encoder, nor encoding the trainer.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

try:
    from engine.corpus import _tally  # noqa: F401
    from engine.encode import _encoder_core  # noqa: F401
    from engine.formats import _ranks_core  # noqa: F401
    from engine.train import _trainer_core  # noqa: F401
    from engine.train.unigram import _unigram_core  # noqa: F401
    from engine.train.wordpiece import _wordpiece_core  # noqa: F401
except ImportError:  # a source tree that was never built
    raise ImportError(
        "engine's compiled modules are missing: install the package, e.g. `pip install -e .` in a source checkout (needs a C compiler)"
    ) from None

if TYPE_CHECKING:
    from engine.corpus.pretokenize import PATTERNS, PreTokenizer
    from engine.corpus.stages import AddedToken, PrefixSpace, Split
    from engine.encode.flat import FlatIds
    from engine.encode.tokenizer import EncodeStep, PreTokenTrace, Tokenizer
    from engine.encode.unigram import UnigramTokenizer
    from engine.encode.wordpiece import WordPieceTokenizer
    from engine.errors import BpeError, CorpusError, ModelFileError, OutputError, ResumeError, SettingsError, TokenIdError
    from engine.formats.atomic import atomic_write
    from engine.train.events import MergeStep, PairChange, StalePop
    from engine.train.occurrences import Cell, Occurrence, PairOccurrences, WordCells
    from engine.train.reference import reference_merges, train_reference
    from engine.train.trainer import Trainer, Word, train_bpe, train_from_iterator
    from engine.train.unigram.events import UnigramRound
    from engine.train.unigram.trainer import UnigramTrainer
    from engine.train.wordpiece.events import WordPieceStep
    from engine.train.wordpiece.trainer import WordPieceTrainer

_HOMES = {
    "AddedToken": "engine.corpus.stages",
    "BpeError": "engine.errors",
    "Cell": "engine.train.occurrences",
    "CorpusError": "engine.errors",
    "EncodeStep": "engine.encode.tokenizer",
    "FlatIds": "engine.encode.flat",
    "MergeStep": "engine.train.events",
    "ModelFileError": "engine.errors",
    "Occurrence": "engine.train.occurrences",
    "OutputError": "engine.errors",
    "PATTERNS": "engine.corpus.pretokenize",
    "PairChange": "engine.train.events",
    "PairOccurrences": "engine.train.occurrences",
    "PreTokenTrace": "engine.encode.tokenizer",
    "PreTokenizer": "engine.corpus.pretokenize",
    "PrefixSpace": "engine.corpus.stages",
    "ResumeError": "engine.errors",
    "SettingsError": "engine.errors",
    "Split": "engine.corpus.stages",
    "StalePop": "engine.train.events",
    "TokenIdError": "engine.errors",
    "Tokenizer": "engine.encode.tokenizer",
    "Trainer": "engine.train.trainer",
    "UnigramRound": "engine.train.unigram.events",
    "UnigramTokenizer": "engine.encode.unigram",
    "UnigramTrainer": "engine.train.unigram.trainer",
    "Word": "engine.train.trainer",
    "WordCells": "engine.train.occurrences",
    "WordPieceStep": "engine.train.wordpiece.events",
    "WordPieceTokenizer": "engine.encode.wordpiece",
    "WordPieceTrainer": "engine.train.wordpiece.trainer",
    "atomic_write": "engine.formats.atomic",
    "reference_merges": "engine.train.reference",
    "train_bpe": "engine.train.trainer",
    "train_from_iterator": "engine.train.trainer",
    "train_reference": "engine.train.reference",
}
"""Where each public name lives."""


def __getattr__(name: str) -> object:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'engine' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value  # found directly from now on
    return value


__all__ = [
    "AddedToken",
    "BpeError",
    "Cell",
    "CorpusError",
    "EncodeStep",
    "FlatIds",
    "MergeStep",
    "Occurrence",
    "ModelFileError",
    "OutputError",
    "PATTERNS",
    "PairChange",
    "PairOccurrences",
    "PrefixSpace",
    "PreTokenTrace",
    "PreTokenizer",
    "ResumeError",
    "SettingsError",
    "Split",
    "StalePop",
    "TokenIdError",
    "Tokenizer",
    "Trainer",
    "UnigramRound",
    "UnigramTokenizer",
    "UnigramTrainer",
    "Word",
    "WordCells",
    "WordPieceStep",
    "WordPieceTokenizer",
    "WordPieceTrainer",
    "atomic_write",
    "reference_merges",
    "train_bpe",
    "train_from_iterator",
    "train_reference",
]
