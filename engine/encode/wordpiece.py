"""Encoding with a WordPiece vocabulary, as BERT does: the longest piece first.

Added tokens (``[CLS]``, ``[MASK]``...) are cut out of the raw text first, as Hugging Face's
added tokens are (leftmost, then longest). The rest is lowercased if the model asks, cut
into BERT's words (``engine.corpus.words.bert_words``: whitespace dropped, each punctuation
character a word; with ``handle_chinese_chars`` each CJK ideograph too), and each word is
covered greedily from the left:

    from the word's start take the longest prefix in the vocabulary; then, from where it
    ended, the longest ``##`` + piece in the vocabulary; and so on to the word's end.

A word that some rest of it cannot start (no piece of the vocabulary does), or longer than
``max_input_chars_per_word`` characters, is one ``[UNK]``. The ids equal Hugging Face
``tokenizers``' ``encode(text, add_special_tokens=False).ids`` on the same ``tokenizer.json``
(where the model lowercases, but for the few characters cased since the Unicode version of
Python's tables: Python 3.11 lowers by Unicode 14, ``tokenizers`` by a later one).

``encode`` caches the ids of each distinct whitespace-separated chunk and word, so a corpus
costs a dictionary lookup a chunk once its words are known; ``encode_steps`` runs the same
matching and records every lookup, for a screen to show step by step.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import chain
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import regex

from engine.corpus.stages import AddedToken, AddedTokens
from engine.corpus.words import _NOT_WHITE_SPACE, bert_words, lowercase
from engine.encode.flat import FlatBatches
from engine.encode.token_ids import TokenTexts, as_id
from engine.errors import ModelFileError
from engine.formats import wordpiece_files as files
from engine.formats.atomic import atomic_write, make_dir
from engine.formats.tokenizer_files import TOKENIZER_JSON, added_tokens
from engine.formats.wordpiece_files import MAX_INPUT_CHARS_PER_WORD, PREFIX, UNK_TOKEN, VOCAB_TXT, WordPieceDecoder

if TYPE_CHECKING:
    from engine.train.wordpiece.trainer import WordPieceTrainer

CHINESE_CHARS = (
    "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002a6df\U0002a700-\U0002b81f\U0002b920-\U0002ceaf\U0002f800-\U0002fa1f"
)
"""The CJK ideographs BERT's ``handle_chinese_chars`` makes words of their own (its fixed list of blocks)."""
_CHINESE = regex.compile(f"[{CHINESE_CHARS}]")
_CHINESE_APART = regex.compile(f"[{CHINESE_CHARS}]|[^{CHINESE_CHARS}]+")

_CLEANUPS = (
    (" .", "."),
    (" ?", "?"),
    (" !", "!"),
    (" ,", ","),
    (" ' ", "'"),
    (" n't", "n't"),
    (" 'm", "'m"),
    (" do not", " don't"),
    (" 's", "'s"),
    (" 've", "'ve"),
    (" 're", "'re"),
)
"""HF's WordPiece decoder's ``cleanup``, in its order."""


@dataclass(frozen=True, slots=True)
class WordPieceTry:
    """One lookup: a candidate piece (with its ``##`` after the word's start) and whether
    the vocabulary has it."""

    piece: str
    found: bool


@dataclass(frozen=True, slots=True)
class WordPieceMatch:
    """The longest piece found at one point of a word."""

    start: int
    """Where the piece starts in the word, in characters."""
    end: int
    token: str
    """The vocabulary entry: the word's characters it covers, after ``##`` unless it starts the word."""
    id: int
    tried: tuple[WordPieceTry, ...]
    """The candidates looked up, longest first; the last is the one found. Candidates longer
    than the vocabulary's longest entry are not looked up: none of them could be there."""


@dataclass(frozen=True, slots=True)
class WordTrace:
    """The story of one word (or added token) of an encode."""

    word: str
    """The word as matched (lowercased, when the model lowercases); an added token's text."""
    start: int
    """Where it is in the text encoded, in characters."""
    end: int
    matches: tuple[WordPieceMatch, ...]
    """The pieces taken in order, up to where the word ran out or no piece was found."""
    ids: tuple[int, ...]
    """The word's ids: the matches' ids, or the unknown token's alone."""
    unknown_reason: str | None = None
    """Why the word is ``[UNK]``: no piece starts a rest of it, or it is too long."""
    dead_end: tuple[WordPieceTry, ...] = ()
    """The lookups at the rest that no piece starts (longest first), all not found."""
    special: bool = False
    """An added token, cut out of the text before the words."""


class TokenSpan(NamedTuple):
    """A token of an encode with the span of the text it stands for, in characters."""

    id: int
    start: int
    end: int
    special: bool


class _Record:
    """What ``_cover`` writes down while it matches one word (for ``encode_steps``)."""

    def __init__(self) -> None:
        self.matches: list[WordPieceMatch] = []
        self.dead_end: tuple[WordPieceTry, ...] = ()
        self.reason: str | None = None


class WordPieceTokenizer(FlatBatches):
    """A WordPiece tokenizer: ``vocab`` (id -> token) and the options of BERT's matching.

    ``special_tokens``: strings (each keeps its id in ``vocab``, or takes the next one) or
    ``AddedToken``s with their ids (HF's added tokens, matched as HF matches them);
    ``unk_token`` must be in the vocabulary. ``decoder``: how ``decode`` joins tokens (None:
    with spaces, as HF does without a decoder).
    """

    def __init__(
        self,
        vocab: Sequence[str],
        special_tokens: Sequence[str | AddedToken] = (),
        unk_token: str = UNK_TOKEN,
        prefix: str = PREFIX,
        max_input_chars_per_word: int = MAX_INPUT_CHARS_PER_WORD,
        lowercase: bool = False,
        *,
        handle_chinese_chars: bool = False,
        decoder: WordPieceDecoder | None = WordPieceDecoder(),  # noqa: B008  # frozen: one shared default does no harm
        cache_size: int = 1 << 17,
    ) -> None:
        self.vocab = list(vocab)
        self._ids: dict[str, int] = {}
        """Token -> id, what the matching looks up."""
        for i, entry in enumerate(self.vocab):
            if not isinstance(entry, str) or not entry:
                raise ValueError(f"token {i} is {entry!r}, not a non-empty string")
            if self._ids.setdefault(entry, i) != i:
                raise ValueError(f"token {entry!r} is in the vocabulary twice (ids {self._ids[entry]} and {i})")
        self.added_tokens: list[AddedToken] = []
        """Every token cut out of the text whole, with its id."""
        for token in added_tokens(special_tokens):
            if not token.content:
                raise ValueError("a special token is empty")
            i = self._ids.get(token.content, len(self.vocab)) if token.id < 0 else token.id
            if i == len(self.vocab):
                self.vocab.append(token.content)
                self._ids[token.content] = i
            elif not 0 <= i < len(self.vocab):
                raise ValueError(f"special token {token.content!r} has id {i}, beyond the vocabulary's {len(self.vocab):,} tokens")
            elif self.vocab[i] != token.content:
                raise ValueError(f"special token {token.content!r} has id {i}, which the vocabulary gives to {self.vocab[i]!r}")
            self.added_tokens.append(dataclasses.replace(token, id=i))
        self.special_tokens = [t.content for t in self.added_tokens]
        self.special_ids = {t.content: t.id for t in self.added_tokens}
        if unk_token not in self._ids:
            raise ValueError(f"the unknown token {unk_token!r} is not in the vocabulary")
        self.unk_token = unk_token
        self.unk_id = self._ids[unk_token]
        self.prefix = prefix
        self.max_input_chars_per_word = max_input_chars_per_word
        self.lowercase = lowercase
        self.handle_chinese_chars = handle_chinese_chars
        self.decoder = decoder
        self.cache_size = cache_size
        """Entries each cache may hold; a full cache is emptied, so memory stays bounded."""
        self._added = AddedTokens(self.added_tokens)
        self._longest_start = max(map(len, self.vocab))
        """The longest candidate worth looking up at a word's start."""
        self._longest_rest = max((len(t) - len(prefix) for t in self.vocab if t.startswith(prefix)), default=0)
        """The longest rest worth looking up after ``prefix``: 0 when no token continues a word."""
        self._chunks: dict[str, tuple[int, ...]] = {}
        """Ids of each whitespace-separated chunk (as matched: lowercased)."""
        self._words: dict[str, tuple[int, ...]] = {}
        """Ids of each word."""
        self._texts: tuple[WordPieceDecoder | None, TokenTexts] | None = None
        """``decoder`` and the texts of the tokens by it, once ``decode`` has run."""

    def token(self, i: int) -> str:
        """The token of id ``i``; ``TokenIdError`` names an id that is none."""
        return self.vocab[as_id(i, len(self.vocab) - 1)]

    def digest(self) -> str:
        """BLAKE2b of what encoding depends on: the same model gives the same digest whichever
        file it was loaded from."""
        settings = [
            self.vocab,
            [dataclasses.astuple(t) for t in self.added_tokens],
            [self.unk_token, self.prefix, self.max_input_chars_per_word, self.lowercase, self.handle_chinese_chars],
        ]
        return hashlib.blake2b(json.dumps(settings).encode("utf-8"), digest_size=16).hexdigest()

    @classmethod
    def from_trainer(cls, trainer: WordPieceTrainer) -> WordPieceTokenizer:
        """The tokenizer as trained so far: the trainer's vocabulary in id order, its special
        tokens, its lowercasing."""
        vocab, special_tokens, lowercase = trainer.state()
        return cls(vocab, special_tokens, lowercase=lowercase)

    # -- files ----------------------------------------------------------------------------

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> WordPieceTokenizer:
        """Load a WordPiece ``tokenizer.json``, BERT's ``vocab.txt``, or a directory holding
        either (``engine.formats.wordpiece_files``)."""
        data = files.read_wordpiece(path)
        try:
            return cls(
                data.vocab,
                data.added_tokens,
                data.unk_token,
                data.prefix,
                data.max_input_chars_per_word,
                data.lowercase,
                handle_chinese_chars=data.handle_chinese_chars,
                decoder=data.decoder,
            )
        except ValueError as e:
            raise ModelFileError(f"{data.path}: {e}") from None

    def files(self) -> dict[str, str]:
        """What ``save_dir`` writes, by file name: ``tokenizer.json`` and ``vocab.txt``."""
        return {TOKENIZER_JSON: self._hf_json(), VOCAB_TXT: files.vocab_txt(self.vocab)}

    def _hf_json(self) -> str:
        return files.wordpiece_json(
            self.vocab,
            self.added_tokens,
            self.unk_token,
            self.prefix,
            self.max_input_chars_per_word,
            self.lowercase,
            self.handle_chinese_chars,
            self.decoder,
        )

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write an HF ``tokenizer.json`` (loads in ``tokenizers.Tokenizer.from_file``)."""
        return atomic_write(path, self._hf_json())

    def save_dir(self, directory: str | os.PathLike[str]) -> list[Path]:
        """Write ``tokenizer.json`` and ``vocab.txt`` into ``directory`` (made if need be)."""
        directory = make_dir(directory)
        return [atomic_write(directory / name, text) for name, text in self.files().items()]

    # -- the matching ---------------------------------------------------------------------

    def _cover(self, word: str, record: _Record | None = None) -> tuple[int, ...]:
        """The ids of one word, longest piece first; every lookup written into ``record``.

        This is the loop ``encode_steps`` shows; ``encode`` runs it once a distinct word."""
        if len(word) > self.max_input_chars_per_word:
            if record is not None:
                record.reason = f"longer than {self.max_input_chars_per_word} characters"
            return (self.unk_id,)
        find = self._ids.get
        ids = []
        start, prefix, longest = 0, "", self._longest_start
        while start < len(word):
            tried: list[WordPieceTry] | None = [] if record is not None else None
            end = min(len(word), start + longest)
            while end > start:
                piece = prefix + word[start:end]
                i = find(piece)
                if tried is not None:
                    tried.append(WordPieceTry(piece, i is not None))
                if i is not None:
                    break
                end -= 1
            else:
                if record is not None:
                    record.dead_end = tuple(tried or ())
                    record.reason = f"no piece of the vocabulary starts this rest: {prefix + word[start:]!r}"
                return (self.unk_id,)
            if record is not None:
                record.matches.append(WordPieceMatch(start, end, piece, i, tuple(tried or ())))
            ids.append(i)
            start, prefix, longest = end, self.prefix, self._longest_rest
        return tuple(ids)

    def _split_words(self, text: str) -> list[str]:
        """BERT's words of (normalized) text."""
        words: list[str] = bert_words().findall(text)
        if self.handle_chinese_chars and _CHINESE.search(text):
            words = [part for word in words for part in _CHINESE_APART.findall(word)]
        return words

    def _chunk(self, chunk: str) -> tuple[int, ...]:
        """The ids of the words of one chunk, each word's ids cached."""
        cached = self._words
        if len(cached) > self.cache_size:
            cached.clear()
        ids: list[int] = []
        for word in self._split_words(chunk):
            got = cached.get(word)
            if got is None:
                got = cached[word] = self._cover(word)
            ids += got
        return tuple(ids)

    def _piece_ids(self, piece: str) -> list[int]:
        """The ids of the text between added tokens. It is cut at whitespace by
        ``str.split`` (fast), each distinct chunk matched once and cached; where ``str.split``
        would cut elsewhere than BERT (U+001C-U+001F), by BERT's regex."""
        if self.lowercase:
            piece = lowercase(piece)
        chunks = bert_words().findall(piece) if any(c in piece for c in _NOT_WHITE_SPACE) else piece.split()
        cached = self._chunks
        try:
            return list(chain.from_iterable(map(cached.__getitem__, chunks)))
        except KeyError:
            pass
        missing = set(chunks).difference(cached)
        if len(cached) + len(missing) > self.cache_size:
            cached.clear()
        for chunk in missing:
            cached[chunk] = self._chunk(chunk)
        try:
            return list(chain.from_iterable(map(cached.__getitem__, chunks)))
        except KeyError:  # another thread emptied the cache meanwhile
            return [i for chunk in chunks for i in cached.get(chunk) or self._chunk(chunk)]

    def _pieces(self, text: str) -> Iterator[tuple[str, int, int, AddedToken | None, list[int] | None]]:
        """``(word, start, end, token, origin)`` in order: each added token with the text it
        covers, and each word as matched; ``start``/``end`` its span of ``text``. ``origin``:
        where lowercasing changed a piece's length (``İ`` is two characters lowered), the
        character of ``text`` each of the word's characters came from; else None."""
        at = 0
        for piece, token in self._added.split(text):
            if token is not None:
                yield piece, at, at + len(piece), token, None
                at += len(piece)
                continue
            matched = lowercase(piece) if self.lowercase else piece
            origin = None
            if len(matched) != len(piece):
                origin = [at + k for k, c in enumerate(piece) for _ in range(len(c.lower()))]
            for m in bert_words().finditer(matched):
                spans = [m.span()]
                if self.handle_chinese_chars and _CHINESE.search(m.group()):
                    spans = [(m.start() + a, m.start() + b) for a, b in (p.span() for p in _CHINESE_APART.finditer(m.group()))]
                for a, b in spans:
                    if origin is None:
                        yield matched[a:b], at + a, at + b, None, None
                    else:
                        yield matched[a:b], origin[a], origin[b - 1] + 1, None, origin[a:b]
            at += len(piece)

    # -- public API -----------------------------------------------------------------------

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text``."""
        ids: list[int] = []
        for piece, token in self._added.split(text):
            if token is not None:
                ids.append(token.id)
            else:
                ids += self._piece_ids(piece)
        return ids

    def encode_batch(self, texts: Iterable[str], workers: int | None = None) -> list[list[int]]:
        """``[encode(text) for text in texts]``, one after another: the matching runs in
        Python, which holds the GIL, so threads would only take turns. ``workers`` is
        accepted so that a caller encodes BPE and WordPiece models alike."""
        return [self.encode(text) for text in texts]

    def encode_steps(self, text: str) -> list[WordTrace]:
        """Every word (and added token) of ``text`` with every lookup of its matching."""
        traces = []
        for word, start, end, token, _ in self._pieces(text):
            if token is not None:
                traces.append(WordTrace(word, start, end, (), (token.id,), special=True))
                continue
            record = _Record()
            ids = self._cover(word, record)
            traces.append(WordTrace(word, start, end, tuple(record.matches), ids, record.reason, record.dead_end))
        return traces

    def encode_spans(self, text: str) -> list[TokenSpan]:
        """The tokens of ``text`` with the span of ``text`` each stands for: a piece its
        characters of the word, ``[UNK]`` its whole word, an added token the text it covers.
        Whitespace between words belongs to no token."""
        spans = []
        for word, start, end, token, origin in self._pieces(text):
            if token is not None:
                spans.append(TokenSpan(token.id, start, end, True))
                continue
            record = _Record()
            ids = self._cover(word, record)
            if record.reason is not None:
                spans.append(TokenSpan(ids[0], start, end, False))
                continue
            for m in record.matches:
                if origin is None:
                    spans.append(TokenSpan(m.id, start + m.start, start + m.end, False))
                else:
                    spans.append(TokenSpan(m.id, origin[m.start], origin[m.end - 1] + 1, False))
        return spans

    def decode(self, ids: Sequence[int]) -> str:
        """The text of ``ids`` as HF's ``decode(ids, skip_special_tokens=False)`` gives it:
        joined by the decoder (``##`` dropped, a space before every other token, the cleanup),
        or with spaces when the model has none. ``TokenIdError`` names the first bad id and
        where it is."""
        return self._token_texts().decode(ids)

    def _token_texts(self) -> TokenTexts:
        """Each token's text in a decode, by ``decoder`` (made again when it is replaced)."""
        decoder = self.decoder
        if self._texts is None or self._texts[0] is not decoder:
            first = self.vocab
            if decoder is None:
                later = [" " + t for t in first]
            else:
                later = [t[len(decoder.prefix) :] if t.startswith(decoder.prefix) else " " + t for t in first]
                for dirty, clean in _CLEANUPS if decoder.cleanup else ():
                    first = [t.replace(dirty, clean) for t in first]
                    later = [t.replace(dirty, clean) for t in later]
            self._texts = (decoder, TokenTexts(list(first), later))
        return self._texts[1]

    def decode_bytes(self, ids: Sequence[int]) -> bytes:
        """``decode(ids)`` as UTF-8 (every token is whole characters)."""
        return self.decode(ids).encode("utf-8")
