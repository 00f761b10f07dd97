"""bpe-tui's headless engine: byte-level BPE training, encoding and file formats.

Imports only the standard library and ``regex``; its hot loops are compiled C modules of
its own (``engine/*/_*.c``).
"""

try:
    from engine.corpus import _tally  # noqa: F401
    from engine.encode import _encoder_core  # noqa: F401
    from engine.formats import _ranks_core  # noqa: F401
    from engine.train import _trainer_core  # noqa: F401
except ImportError:  # a source tree that was never built
    raise ImportError(
        "engine's compiled modules are missing: install the package, e.g. `pip install -e .` in a source checkout (needs a C compiler)"
    ) from None

from engine.corpus.pretokenize import PATTERNS, PreTokenizer
from engine.corpus.stages import AddedToken, PrefixSpace, Split
from engine.encode.tokenizer import EncodeStep, PreTokenTrace, Tokenizer
from engine.errors import BpeError, CorpusError, ModelFileError, OutputError, ResumeError, SettingsError
from engine.formats.atomic import atomic_write
from engine.train.events import MergeStep, PairChange, StalePop
from engine.train.occurrences import Cell, Occurrence, PairOccurrences, WordCells
from engine.train.reference import reference_merges, train_reference
from engine.train.trainer import Trainer, Word, train_bpe, train_from_iterator

__all__ = [
    "AddedToken",
    "BpeError",
    "Cell",
    "CorpusError",
    "EncodeStep",
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
    "Tokenizer",
    "Trainer",
    "Word",
    "WordCells",
    "atomic_write",
    "reference_merges",
    "train_bpe",
    "train_from_iterator",
    "train_reference",
]
