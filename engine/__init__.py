"""bpe-tui's headless engine: byte-level BPE training, encoding and file formats.

Imports only the standard library and ``regex``; its hot loops are compiled C modules of
its own (``engine/_*.c``).
"""

try:
    from . import _encoder_core, _space_parts, _trainer_core  # noqa: F401
except ImportError:  # a source tree that was never built
    raise ImportError(
        "engine's compiled modules are missing: install the package, e.g. "
        "`pip install -e .` in a source checkout (needs a C compiler)"
    ) from None

from .errors import BpeError, CorpusError, ModelFileError, ResumeError, SettingsError
from .formats import atomic_write
from .events import MergeStep, PairChange, StalePop
from .occurrences import Cell, Occurrence, PairOccurrences, WordCells
from .pretokenize import PATTERNS, PreTokenizer
from .reference import reference_merges, train_reference
from .tokenizer import EncodeStep, PreTokenTrace, Tokenizer
from .trainer import Trainer, Word, train_bpe, train_from_iterator

__all__ = [
    "BpeError",
    "Cell",
    "CorpusError",
    "EncodeStep",
    "MergeStep",
    "Occurrence",
    "ModelFileError",
    "PATTERNS",
    "PairChange",
    "PairOccurrences",
    "PreTokenTrace",
    "PreTokenizer",
    "ResumeError",
    "SettingsError",
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
