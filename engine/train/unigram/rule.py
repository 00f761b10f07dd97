"""Unigram training's rules, as SentencePiece (``model_type=unigram``) applies them, and as
both trainers (``reference`` and ``trainer``) follow them.

- text: SentencePiece's view with identity normalization. A line is a sentence; spaces
  (U+0020 only: tabs and ``\\r`` are characters like any other) are cut, runs of them
  counted once, and each word starts with ``▁``: ``"Hello  world"`` is ``▁Hello ▁world``.
  A ``▁`` already in the text starts a word too, as the encoder's ``Metaspace`` does.
- words: a piece never crosses a word (``split_by_whitespace``), so the likelihood of a
  sentence is the product of its words' and training runs over the distinct words, each
  weighted by its count: the same sums as over the sentences, in a fraction of the time.
- pieces: at most ``MAX_PIECE_LENGTH`` characters, ``▁`` only first, and one Unicode script
  (Hiragana and Katakana count as Han, a combining mark takes its base's script; digits and
  punctuation are ``Common``, so ``a1`` and ``s,`` are no pieces).
- seeds: every character, and the substrings of the words that are no characters, no
  longer than ``MAX_PIECE_LENGTH``, seen at least twice and not always followed by the same
  character (the longer one would cover all their occurrences: these are the suffix tree's
  branching nodes, with a word's end a branch of its own), ranked by frequency × length;
  the first ``SEED_SIZE``. A piece's first log-probability is ``log(value / sum)``, its
  value the count of a character and frequency × length of a seed.
- a round: ``SUB_ITERATIONS`` rounds of EM (E-step: each piece's expected count over every
  segmentation of every word, ``forward-backward``; M-step: its new log-probability
  ``digamma(count) - digamma(total)``, Bayesian EM's sparse prior; a piece expected fewer
  than ``EXPECTED_THRESHOLD`` times is dropped), then pruning: each piece's loss, what the
  corpus log-likelihood would lose were its Viterbi uses re-segmented the second-best way
  (``prune_loss``), and the ``SHRINKING_FACTOR`` share of the vocabulary with the largest
  losses kept.
- stop: once a round leaves at most ``DESIRED_FACTOR`` × the vocabulary size; then the
  final step drops the pieces their own best segmentation splits and keeps the best scores.
- characters: every character of the corpus stays, whatever its count (its M-step count is
  raised to ``EXPECTED_THRESHOLD``): every word can always be segmented.
- ids: the special tokens (``<unk>`` first), then the pieces by score, highest first, ties
  by code points.
"""

from __future__ import annotations

import math
import os
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from functools import cache
from typing import TYPE_CHECKING

import regex

from engine.corpus.sources import open_binary
from engine.errors import CorpusError, SettingsError, counted, not_utf8

if TYPE_CHECKING:
    from engine.corpus.counting import Progress

SPACE = "\u2581"
"""``▁``: what a space becomes, the start of every word."""
UNKNOWN = "<unk>"
SPECIAL_TOKENS = (UNKNOWN,)
"""The default special tokens: SentencePiece's unknown piece, id 0."""
MAX_PIECE_LENGTH = 16
SEED_SIZE = 1_000_000
SUB_ITERATIONS = 2
EXPECTED_THRESHOLD = 0.5
SHRINKING_FACTOR = 0.75
DESIRED_FACTOR = 1.1
BLOCK_SIZE = 256 << 10
"""Bytes of a corpus file counted at once: its words are Python strings while they are counted."""

SCRIPTS = (
    "Adlam Ahom Anatolian_Hieroglyphs Arabic Armenian Avestan Balinese Bamum Bassa_Vah Batak Bengali Bhaiksuki "
    "Bopomofo Brahmi Braille Buginese Buhid Canadian_Aboriginal Carian Caucasian_Albanian Chakma Cham Cherokee Common "
    "Coptic Cuneiform Cypriot Cyrillic Deseret Devanagari Duployan Egyptian_Hieroglyphs Elbasan Ethiopic Georgian "
    "Glagolitic Gothic Grantha Greek Gujarati Gurmukhi Han Hangul Hanunoo Hatran Hebrew Hiragana Imperial_Aramaic "
    "Inherited Inscriptional_Pahlavi Inscriptional_Parthian Javanese Kaithi Kannada Katakana Kayah_Li Kharoshthi Khmer "
    "Khojki Khudawadi Lao Latin Lepcha Limbu Linear_A Linear_B Lisu Lycian Lydian Mahajani Malayalam Mandaic Manichaean "
    "Marchen Meetei_Mayek Mende_Kikakui Meroitic_Cursive Meroitic_Hieroglyphs Miao Modi Mongolian Mro Multani Myanmar "
    "Nabataean New_Tai_Lue Newa Nko Ogham Ol_Chiki Old_Hungarian Old_Italic Old_North_Arabian Old_Permic Old_Persian "
    "Old_South_Arabian Old_Turkic Oriya Osage Osmanya Pahawh_Hmong Palmyrene Pau_Cin_Hau Phags_Pa Phoenician "
    "Psalter_Pahlavi Rejang Runic Samaritan Saurashtra Sharada Shavian Siddham SignWriting Sinhala Sora_Sompeng "
    "Sundanese Syloti_Nagri Syriac Tagalog Tagbanwa Tai_Le Tai_Tham Tai_Viet Takri Tamil Tangut Telugu Thaana Thai "
    "Tibetan Tifinagh Tirhuta Ugaritic Vai Warang_Citi Yi"
).split()
"""The scripts SentencePiece tells apart (Unicode 9's); a character of a later script is
``Common`` to it, and so here."""
INHERITED = -1
"""The class of a combining mark: the script of the character before it."""
SPACE_CLASS = -2
"""The class of ``▁``."""


# -- the text as SentencePiece sees it -----------------------------------------------------


def count_words(texts: Iterable[str]) -> Counter[str]:
    """The ``▁``-prefixed words of ``texts`` (each a run of whole lines), counted in first-seen order."""
    counts: Counter[str] = Counter()
    for text in texts:
        counts.update(_words(text))
    return counts


def _words(text: str) -> Iterable[str]:
    chunks = [chunk for chunk in text.replace("\n", " ").split(" ") if chunk]
    if SPACE not in text:
        return (SPACE + chunk for chunk in chunks)
    # a ▁ of the text starts a word, as the encoder's Metaspace cuts: "a▁b" is ▁a ▁b, " ▁" is ▁ ▁
    return (SPACE + part for chunk in chunks for part in chunk.split(SPACE))


def count_file_words(path: str | os.PathLike[str], progress: Progress | None = None, errors: str = "strict") -> Counter[str]:
    """The words of a corpus file, read in blocks cut after a space or a line end (both end
    a word, and neither is part of a longer UTF-8 character), with the byte-level reading's
    one-line errors. Only the standard library reads it: a trainer's process stays small."""
    total = os.path.getsize(path) if os.path.isfile(path) else None
    counts: Counter[str] = Counter()
    offset = 0
    pending = b""
    with open_binary(str(path)) as f:
        while True:
            data = f.read(BLOCK_SIZE)
            block = pending + data
            cut = len(block) if not data else max(block.rfind(b"\n"), block.rfind(b" ")) + 1
            if cut == 0 and data:  # no space yet: a long word, kept whole
                pending = block
                continue
            body, pending = block[:cut], block[cut:]
            try:
                counts.update(_words(body.decode("utf-8", errors)))
            except UnicodeDecodeError as e:
                raise CorpusError(f"{not_utf8(path, offset + e.start)} (use --errors replace to read it anyway)") from None
            offset += len(body)
            if progress is not None:
                progress("read", offset, total)
            if not data:
                break
    if not counts:
        raise CorpusError(f"{path}: no words to train on (the file is empty or holds nothing but spaces)")
    return counts


# -- what a piece may be ------------------------------------------------------------------


@cache
def _script_pattern() -> regex.Pattern[str]:
    return regex.compile("|".join(rf"(\p{{Script={name}}})" for name in SCRIPTS))


def script_classes(chars: str) -> list[int]:
    """Each character's class for the one-script rule: an index into ``SCRIPTS`` (Hiragana,
    Katakana and ``ー`` as Han), ``INHERITED`` or ``SPACE_CLASS``."""
    common, han = SCRIPTS.index("Common"), SCRIPTS.index("Han")
    merged = {SCRIPTS.index("Hiragana"): han, SCRIPTS.index("Katakana"): han, SCRIPTS.index("Inherited"): INHERITED}
    classes = []
    for c in chars:
        if c == SPACE:
            classes.append(SPACE_CLASS)
            continue
        m = _script_pattern().match(c)
        script = common if m is None or m.lastindex is None else m.lastindex - 1
        classes.append(han if c == "\u30fc" else merged.get(script, script))
    return classes


def valid_piece(piece: str, classes: Mapping[str, int], max_length: int = MAX_PIECE_LENGTH) -> bool:
    """Whether ``piece`` may be a piece: not too long, ``▁`` only first, one script."""
    if not piece or len(piece) > max_length or SPACE in piece[1:]:
        return False
    previous: int | None = None  # None: any script (nothing yet, or marks alone)
    for c in piece:
        kind: int | None = classes[c]
        if kind == SPACE_CLASS:
            continue
        if kind == INHERITED:
            kind = previous
        if kind is not None and previous is not None and kind != previous:
            return False
        previous = kind
    return True


# -- the numbers --------------------------------------------------------------------------


def digamma(x: float) -> float:
    """ψ(x), as SentencePiece approximates it: the recurrence up to 7, then the asymptotic series."""
    result = 0.0
    while x < 7:
        result -= 1 / x
        x += 1
    x -= 1.0 / 2.0
    xx = 1.0 / x
    xx2 = xx * xx
    xx4 = xx2 * xx2
    return result + math.log(x) + (1.0 / 24.0) * xx2 - (7.0 / 960.0) * xx4 + (31.0 / 8064.0) * xx4 * xx2 - (127.0 / 30720.0) * xx4 * xx4


def m_step(expected: Mapping[str, float], characters: Iterable[str]) -> dict[str, float]:
    """New log-probabilities from expected counts: pieces expected fewer than
    ``EXPECTED_THRESHOLD`` times go, characters stay with at least that count."""
    chars = set(characters)
    kept = {p: max(c, EXPECTED_THRESHOLD) for p, c in expected.items() if c >= EXPECTED_THRESHOLD or p in chars}
    total = digamma(math.fsum(kept.values()))
    return {p: digamma(c) - total for p, c in kept.items()}


def prune_loss(count: float, total: float, alternative_counts: Sequence[float]) -> float:
    """What removing a piece costs the corpus log-likelihood, per token, as SentencePiece
    estimates it: its ``count`` Viterbi uses (of ``total``) go to the pieces of its
    second-best segmentation (``alternative_counts``, their own Viterbi counts), and
    ``loss = count / total × (log p(piece) - Σ log p'(alternative))``."""
    logprob = math.log(count) - math.log(total)
    new_total = math.log(total + count * (len(alternative_counts) - 1))
    alternatives = sum(math.log(c + count) - new_total for c in alternative_counts)
    return count / total * (logprob - alternatives)


def shrunk_size(size: int, desired: int) -> int:
    """The vocabulary a pruning keeps: ``SHRINKING_FACTOR`` of it, not below ``desired``."""
    return max(desired, int(SHRINKING_FACTOR * size))


def desired_size(vocab_size: int) -> int:
    """Pruning stops at this many pieces; the final step then keeps the best ``vocab_size``."""
    return int(vocab_size * DESIRED_FACTOR)


def check_special_tokens(special_tokens: Sequence[str]) -> None:
    """``SettingsError`` when a special token repeats or ``<unk>`` is not among them."""
    if len(set(special_tokens)) != len(special_tokens):
        raise SettingsError("a special token is given twice")
    if UNKNOWN not in special_tokens:
        raise SettingsError(f"the special tokens must hold {UNKNOWN} (what an unknown character becomes)")


def check_vocab_size(vocab_size: int, special_tokens: Sequence[str], characters: int) -> None:
    """``SettingsError`` when the vocabulary cannot hold the special tokens and every character."""
    check_special_tokens(special_tokens)
    if vocab_size < len(special_tokens) + characters:
        raise SettingsError(
            f"vocab size {vocab_size:,} is below the {counted(len(special_tokens), 'special token')} and the "
            f"{characters:,} characters of this corpus, which Unigram keeps ({len(special_tokens) + characters:,})"
        )


def final_order(pieces: Iterable[tuple[str, float]]) -> list[tuple[str, float]]:
    """Pieces in id order: highest score first, ties by code points."""
    return sorted(pieces, key=lambda p: (-p[1], p[0]))


# -- what a round keeps -------------------------------------------------------------------

CANDIDATE, KEEP, SPLIT, UNUSED = 0, 1, 2, 3
"""What pruning makes of a piece: a candidate ranked by its loss; kept whatever it costs (a
character); removed because its own best segmentation splits it (it can never be on a best
path); removed because no word's best path uses it."""
KIND_NAMES = {CANDIDATE: "pruned", KEEP: "kept", SPLIT: "split", UNUSED: "unused"}
"""Why a pruning removed a piece, by its kind (a candidate goes when its loss ranks too low)."""


def pruned(kinds: Sequence[int], losses: Sequence[float], target: int) -> list[int]:
    """The ids a pruning keeps, ascending: every ``KEEP``, then the candidates with the
    largest losses (ties to the smaller id) up to ``target`` pieces in all."""
    kept = [i for i, k in enumerate(kinds) if k == KEEP]
    candidates = sorted((i for i, k in enumerate(kinds) if k == CANDIDATE), key=lambda i: (-losses[i], i))
    return sorted(kept + candidates[: max(0, target - len(kept))])


def finalized(kinds: Sequence[int], scores: Sequence[float], size: int) -> list[int]:
    """The ids the final step keeps, ascending: no piece its own best segmentation splits;
    every ``KEEP``; then the highest scores (ties to the smaller id) up to ``size`` pieces."""
    kept = [i for i, k in enumerate(kinds) if k == KEEP]
    rest = sorted((i for i, k in enumerate(kinds) if k in (CANDIDATE, UNUSED)), key=lambda i: (-scores[i], i))
    return sorted(kept + rest[: max(0, size - len(kept))])
