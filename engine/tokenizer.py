"""Encoding and decoding with a trained vocabulary (seed lecture 000, PART 4).

Special tokens are matched first; the rest is pre-tokenized and each pre-token is merged
by lowest merge rank first: list every adjacent pair with its rank, merge the lowest
(leftmost on a tie), repeat until no pair is in the merge list. This is what GPT-2 and
tiktoken do. ``encode_steps`` records the same loop as it runs, for the encode view.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import chain, islice, repeat
from pathlib import Path

from . import formats
from .errors import ModelFileError
from .pretokenize import PreTokenizer
from .trainer import Trainer

Pair = tuple[int, int]

_NONE = 1 << 62
"""Rank of a pair that is not in the merge list: above every real rank."""


@dataclass(frozen=True, slots=True)
class EncodeStep:
    """One round of the merge loop on one pre-token."""

    parts: list[int]
    """Token ids before this round."""
    ranks: list[int | None]
    """Merge rank of each adjacent pair ``(parts[i], parts[i+1])``; None: not in merges."""
    chosen: int | None
    """Index of the pair merged now (lowest rank, leftmost); None: nothing left to merge."""
    after: list[int]
    """Token ids after this round."""


@dataclass(frozen=True, slots=True)
class PreTokenTrace:
    """The story of one pre-token (or special token) of an encode."""

    text: str
    special: bool
    steps: list[EncodeStep]
    ids: list[int]


class Tokenizer:
    """A byte-level BPE tokenizer: ``vocab`` (id -> bytes) and ``merges`` in rank order."""

    def __init__(
        self,
        vocab: dict[int, bytes],
        merges: list[tuple[bytes, bytes]],
        special_tokens: list[str] | None = None,
        pattern: str = "gpt2",
        cache_size: int = 1 << 17,
    ) -> None:
        self.vocab = dict(vocab)
        self.merges = list(merges)
        self.special_tokens = list(special_tokens or [])
        self.pattern = pattern
        self.encoder = {token: i for i, token in self.vocab.items()}
        for s in self.special_tokens:
            if s.encode("utf-8") not in self.encoder:
                new_id = max(self.vocab, default=-1) + 1
                self.vocab[new_id] = s.encode("utf-8")
                self.encoder[s.encode("utf-8")] = new_id
        self.special_ids = {s: self.encoder[s.encode("utf-8")] for s in self.special_tokens}
        self.pretokenizer = PreTokenizer(pattern, self.special_tokens)
        missing = [b for b in range(256) if bytes([b]) not in self.encoder]
        if missing:
            raise ValueError(f"vocabulary lacks the single byte {missing[0]:#04x}")
        self._byte_ids = [self.encoder[bytes([b])] for b in range(256)]
        self._rank_of: dict[Pair, int] = {}
        self._merged: list[int] = []
        """Id made by each merge rank."""
        for rank, (left, right) in enumerate(merges):
            try:
                pair = (self.encoder[left], self.encoder[right])
                self._merged.append(self.encoder[left + right])
            except KeyError:
                raise ValueError(f"merge {rank} ({left!r}, {right!r}) uses a token not in the vocabulary") from None
            self._rank_of.setdefault(pair, rank)
        self.direct = False
        """Emit a pre-token that is a vocabulary entry as that entry, skipping its merge loop
        (as tiktoken does, and HF with ``ignore_merges``). The same ids only when every entry
        encodes to itself: proven for trained vocabularies (see ``from_trainer``), checked by
        ``verify_direct`` for others, kept in ``tokenizer.json`` as ``ignore_merges``."""
        self._chunks: dict[str, list[int]] = {}
        """Ids of ``" " + key`` for space-separated chunks (see ``_encode_piece``)."""
        self._pretokens: dict[str, list[int]] = {}
        self.cache_size = cache_size
        """Entries each cache may hold; a full cache is emptied, so memory stays bounded."""

    @classmethod
    def from_trainer(cls, trainer: Trainer) -> Tokenizer:
        """The tokenizer as trained so far.

        Every trained entry encodes to itself, so ``direct`` is on: the entry made by merge
        ``r = (a, b)`` first appeared where ``a`` and ``b`` were whole tokens of a word, so no
        merge before ``r`` crossed its span there; merging its bytes alone by rank order
        therefore goes through the same steps, reaches ``[a, b]`` and then merge ``r``.
        """
        tokenizer = cls(trainer.vocab, trainer.merges, list(trainer.special_tokens), trainer.pattern)
        tokenizer.direct = True
        return tokenizer

    def verify_direct(self) -> bool:
        """Turn ``direct`` on if every vocabulary entry encodes to itself (true for GPT-2's
        files); costs one merge loop per entry."""
        specials = set(self.special_ids.values())
        encoder = self.encoder
        self.direct = all(
            self._bpe(token) == [encoder[token]]
            for i, token in self.vocab.items()
            if len(token) > 1 and i not in specials and encoder[token] == i
        )
        return self.direct

    # -- files ----------------------------------------------------------------------------

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Tokenizer:
        """Load a ``tokenizer.json``, or a directory holding one or ``vocab.json`` + ``merges.txt``."""
        return cls._from_data(formats.read_model(path))

    @classmethod
    def from_files(
        cls,
        vocab_json: str | os.PathLike[str],
        merges_txt: str | os.PathLike[str],
        special_tokens: list[str] | None = None,
    ) -> Tokenizer:
        """Load GPT-2 style files; entries no merge makes (``<|endoftext|>``) become special tokens."""
        return cls._from_data(formats.read_gpt2_files(vocab_json, merges_txt, special_tokens))

    @classmethod
    def _from_data(cls, data: formats.ModelData) -> Tokenizer:
        try:
            tokenizer = cls(data.vocab, data.merges, data.special_tokens, data.pattern)
        except ValueError as e:
            raise ModelFileError(f"{data.path}: {e}") from None
        tokenizer.direct = data.direct
        return tokenizer

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write an HF ``tokenizer.json`` (loads in ``tokenizers.Tokenizer.from_file``)."""
        return formats.atomic_write(path, formats.hf_json(self.vocab, self.merges, self.special_tokens, self.pattern, self.direct))

    def save_gpt2_files(self, directory: str | os.PathLike[str]) -> list[Path]:
        """Write GPT-2 style ``vocab.json`` + ``merges.txt`` into ``directory``."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        return [
            formats.atomic_write(directory / formats.VOCAB_JSON, formats.gpt2_vocab_json(self.vocab, self.special_tokens)),
            formats.atomic_write(directory / formats.MERGES_TXT, formats.gpt2_merges_txt(self.merges)),
        ]

    def save_dir(self, directory: str | os.PathLike[str]) -> list[Path]:
        """Write ``tokenizer.json``, ``vocab.json`` and ``merges.txt`` into ``directory``."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        return [self.save(directory / formats.TOKENIZER_JSON), *self.save_gpt2_files(directory)]

    def export_tiktoken(self, path: str | os.PathLike[str]) -> Path:
        """Write tiktoken's ``.tiktoken`` ranks. Load them with ``tiktoken.load.load_tiktoken_bpe``
        and pass ``pat_str=self.pretokenizer.pattern, special_tokens=self.special_ids`` to
        ``tiktoken.Encoding``. ValueError when the ids do not follow merge order."""
        return formats.atomic_write(path, formats.tiktoken_ranks(self.vocab, self.merges, self.special_tokens))

    # -- the merge loop -----------------------------------------------------------------

    def _bpe(self, piece: bytes, steps: list[EncodeStep] | None = None) -> list[int]:
        """Merge one pre-token by lowest rank first; record each round into ``steps``.

        ``ranks[i]`` is the rank of the pair ``(ids[i], ids[i+1])``; a merge changes only
        the two ranks beside it, and ``min`` plus ``index`` find the lowest, leftmost pair.
        """
        rank = self._rank_of.get
        ids = list(map(self._byte_ids.__getitem__, piece))
        ranks = list(map(rank, zip(ids, ids[1:]), repeat(_NONE)))
        while True:
            best = min(ranks, default=_NONE)
            i = ranks.index(best) if best != _NONE else -1
            if steps is not None:
                before, shown = list(ids), [None if r == _NONE else r for r in ranks]
            if i >= 0:
                ids[i : i + 2] = [self._merged[best]]
                del ranks[i]
                if i:
                    ranks[i - 1] = rank((ids[i - 1], ids[i]), _NONE)
                if i < len(ranks):
                    ranks[i] = rank((ids[i], ids[i + 1]), _NONE)
            if steps is not None:
                steps.append(EncodeStep(before, shown, i if i >= 0 else None, list(ids)))
            if i < 0:
                return ids

    def _encode_pretoken(self, pretoken: str) -> list[int]:
        piece = pretoken.encode("utf-8")
        entry = self.encoder.get(piece) if self.direct else None
        return [entry] if entry is not None else self._bpe(piece)

    def _encode_pretokens(self, pretokens: list[str]) -> list[int]:
        return list(chain.from_iterable(map(self._cached(pretokens), pretokens)))

    def _cached(self, pretokens: Iterable[str]) -> Callable[[str], list[int]]:
        """Merge the pre-tokens not cached yet, each once; returns the cache's lookup."""
        cache = self._pretokens
        wanted = set(pretokens)
        if len(cache) + len(wanted) > self.cache_size:
            cache.clear()  # bounded memory on endless streams
        for pretoken in wanted.difference(cache):
            cache[pretoken] = self._encode_pretoken(pretoken)
        return cache.__getitem__

    def _encode_piece(self, piece: str, out: list[int]) -> None:
        """Append the ids of one ordinary piece to ``out``.

        Under the named patterns a space after a non-space always starts a pre-token, so the
        piece is cut there; every part but the first stands for ``" " + part``, and its ids
        are cached: most of a text is parts seen before.
        """
        pretok = self.pretokenizer
        if not pretok.chunked:
            out += self._encode_pretokens(pretok.pretokens(piece))
            return
        parts = pretok.space_parts(piece)
        out += self._encode_pretokens(pretok.pretokens(parts[0]))
        chunks = self._chunks
        try:
            found = list(map(chunks.__getitem__, islice(parts, 1, None)))
        except KeyError:
            wanted = set(islice(parts, 1, None))
            if len(chunks) + len(wanted) > self.cache_size:
                chunks.clear()  # bounded memory on endless streams
            self._fill(wanted.difference(chunks))
            found = list(map(chunks.__getitem__, islice(parts, 1, None)))
        out.extend(chain.from_iterable(found))

    def _fill(self, missing: set[str]) -> None:
        """Encode and cache the parts in ``missing`` (see ``_encode_piece``), all at once:
        the regex runs per part, the merge loop once per distinct pre-token among them."""
        chunks = self._chunks
        parts = list(missing)
        split = list(map(self.pretokenizer.regex.findall, [" " + p for p in parts]))
        ids_of = self._cached(chain.from_iterable(split))
        for part, pretokens in zip(parts, split):
            chunks[part] = list(chain.from_iterable(map(ids_of, pretokens)))

    # -- public API -----------------------------------------------------------------------

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text``."""
        out: list[int] = []
        for piece, special in self.pretokenizer.split_special(text):
            if special:
                out.append(self.special_ids[piece])
            else:
                self._encode_piece(piece, out)
        return out

    def encode_iterable(self, iterable: Iterable[str]) -> Iterator[int]:
        """Lazily encode a stream of strings; the ids equal ``encode`` of their concatenation.

        Text is encoded up to the last cut that more input cannot change
        (``PreTokenizer.safe_cut``); the rest waits for the next string.
        """
        pretok = self.pretokenizer
        buffer = ""
        for text in iterable:
            buffer += text
            cut = pretok.safe_cut(buffer)
            if cut:
                yield from self.encode(buffer[:cut])
                buffer = buffer[cut:]
        if buffer:
            yield from self.encode(buffer)

    def encode_steps(self, text: str) -> list[PreTokenTrace]:
        """Every pre-token of ``text`` with each round of its merge loop (see ``EncodeStep``)."""
        traces = []
        for piece, special in self.pretokenizer.split_special(text):
            if special:
                traces.append(PreTokenTrace(piece, True, [], [self.special_ids[piece]]))
                continue
            for pretoken in self.pretokenizer.pretokens(piece):
                steps: list[EncodeStep] = []
                ids = self._bpe(pretoken.encode("utf-8"), steps)
                traces.append(PreTokenTrace(pretoken, False, steps, ids))
        return traces

    def decode_bytes(self, ids: Sequence[int]) -> bytes:
        """The bytes of ``ids`` joined."""
        vocab = self.vocab
        try:
            return b"".join(map(vocab.__getitem__, ids))
        except (KeyError, TypeError):
            bad = next(i for i in ids if not isinstance(i, int) or i not in vocab)
            raise ValueError(f"token id {bad!r} is not in the vocabulary (0-{max(vocab)})") from None

    def decode(self, ids: Sequence[int]) -> str:
        """Text of ``ids``; invalid UTF-8 (a token may hold half a character) becomes U+FFFD."""
        return self.decode_bytes(ids).decode("utf-8", errors="replace")
