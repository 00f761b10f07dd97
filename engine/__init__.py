"""bpe-tui's headless engine: byte-level BPE training, encoding and file formats.

Imports only the standard library and ``regex``.
"""

from .errors import BpeError, CorpusError, ModelFileError, ResumeError, SettingsError
from .formats import atomic_write
from .events import MergeStep, PairChange, StalePop
from .pretokenize import PATTERNS, PreTokenizer
from .reference import train_reference
from .tokenizer import EncodeStep, PreTokenTrace, Tokenizer
from .trainer import Trainer, Word, train_bpe

__all__ = [
    "BpeError",
    "CorpusError",
    "EncodeStep",
    "MergeStep",
    "ModelFileError",
    "PATTERNS",
    "PairChange",
    "PreTokenTrace",
    "PreTokenizer",
    "ResumeError",
    "SettingsError",
    "StalePop",
    "Tokenizer",
    "Trainer",
    "Word",
    "atomic_write",
    "train_bpe",
    "train_reference",
]
