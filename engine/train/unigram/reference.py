"""The plain Unigram trainer: every segmentation of every word, enumerated.

The rules of ``engine.train.unigram.rule`` as written, for tiny corpora: a word's
likelihood is the sum over all its segmentations of the product of their pieces'
probabilities, a piece's expected count the sum over them of how often it appears times the
segmentation's share; the best segmentation is the most probable one. The optimized
``UnigramTrainer`` must find the same seeds, likelihoods, expected counts, Viterbi counts and
losses (to 1e-9), and so keep the same pieces.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from engine.train.unigram.rule import (
    CANDIDATE,
    KEEP,
    MAX_PIECE_LENGTH,
    SEED_SIZE,
    SPECIAL_TOKENS,
    SPLIT,
    SUB_ITERATIONS,
    UNUSED,
    check_vocab_size,
    desired_size,
    finalized,
    m_step,
    prune_loss,
    pruned,
    script_classes,
    shrunk_size,
    valid_piece,
)


def segmentations(word: str, pieces: Mapping[str, float], exclude: str | None = None) -> Iterator[tuple[str, ...]]:
    """Every way to write ``word`` as pieces (not using ``exclude``), left to right."""
    if not word:
        yield ()
        return
    for end in range(1, min(len(word), MAX_PIECE_LENGTH) + 1):
        head = word[:end]
        if head in pieces and head != exclude:
            for rest in segmentations(word[end:], pieces, exclude):
                yield (head, *rest)


def log_score(segmentation: Sequence[str], scores: Mapping[str, float]) -> float:
    return sum(scores[p] for p in segmentation)


def e_step(word_counts: Mapping[str, int], scores: Mapping[str, float]) -> tuple[float, dict[str, float]]:
    """The corpus log-likelihood and every piece's expected count."""
    loglik = 0.0
    expected: dict[str, float] = dict.fromkeys(scores, 0.0)
    for word, count in word_counts.items():
        segs = list(segmentations(word, scores))
        logs = [log_score(s, scores) for s in segs]
        top = max(logs)
        z = top + math.log(math.fsum(math.exp(v - top) for v in logs))
        loglik += count * z
        for seg, v in zip(segs, logs, strict=True):
            share = count * math.exp(v - z)
            for piece in seg:
                expected[piece] += share
    return loglik, expected


def best_segmentation(word: str, scores: Mapping[str, float], exclude: str | None = None) -> tuple[str, ...] | None:
    """The most probable segmentation (None when there is none); of equally probable ones,
    the one whose last piece is longest, then the one before it, and so on (Viterbi from the
    left keeps the first path to reach each place)."""
    return max(segmentations(word, scores, exclude), key=lambda s: (log_score(s, scores), [len(p) for p in reversed(s)]), default=None)


def viterbi_counts(word_counts: Mapping[str, int], scores: Mapping[str, float]) -> tuple[int, Counter[str]]:
    """The tokens of the corpus on the best paths, and each piece's count there."""
    counts: Counter[str] = Counter()
    for word, count in word_counts.items():
        for piece in best_segmentation(word, scores) or ():
            counts[piece] += count
    return sum(counts.values()), counts


def seed_pieces(word_counts: Mapping[str, int], seed_size: int = SEED_SIZE, max_length: int = MAX_PIECE_LENGTH) -> dict[str, float]:
    """The seeds in order, with their first log-probabilities: the characters by count, then
    the substrings seen twice or more that no one character always follows, by frequency ×
    length, then length, then code points."""
    chars: Counter[str] = Counter()
    freq: Counter[str] = Counter()
    followers: defaultdict[str, set[str]] = defaultdict(set)
    ends: set[str] = set()
    for word, count in word_counts.items():
        for c in word:
            chars[c] += count
        for i in range(len(word)):
            for j in range(i + 2, min(len(word), i + max_length) + 1):
                s = word[i:j]
                freq[s] += count
                if j == len(word):
                    ends.add(s)
                else:
                    followers[s].add(word[j])
    classes = dict(zip(chars, script_classes("".join(chars)), strict=True))
    seeds = [s for s, f in freq.items() if f >= 2 and (s in ends or len(followers[s]) >= 2) and valid_piece(s, classes, max_length)]
    seeds.sort(key=lambda s: (-freq[s] * len(s), -len(s), s))
    values = {c: float(n) for c, n in sorted(chars.items(), key=lambda cn: (-cn[1], cn[0]))}
    values.update((s, float(freq[s] * len(s))) for s in seeds[:seed_size])
    total = math.log(math.fsum(values.values()))
    return {p: math.log(v) - total for p, v in values.items()}


@dataclass(frozen=True)
class Analysis:
    """What pruning knows of one piece."""

    kind: int
    freq: int
    """Its count on the corpus's best paths."""
    loss: float
    alternatives: tuple[str, ...]
    """Its own best segmentation into other pieces (empty for a character)."""


def analyze(word_counts: Mapping[str, int], scores: Mapping[str, float]) -> tuple[int, dict[str, Analysis]]:
    """Each piece's kind, Viterbi count and loss, as pruning sees them; and the tokens."""
    tokens, freq = viterbi_counts(word_counts, scores)
    total = sum(freq.values())
    out = {}
    for piece, score in scores.items():
        if len(piece) == 1:
            out[piece] = Analysis(KEEP, freq[piece], 0.0, ())
            continue
        alt = best_segmentation(piece, scores, exclude=piece) or ()
        if not alt:
            out[piece] = Analysis(KEEP, freq[piece], 0.0, ())
        elif log_score(alt, scores) > score:
            out[piece] = Analysis(SPLIT, freq[piece], 0.0, alt)
        elif freq[piece] == 0:
            out[piece] = Analysis(UNUSED, 0, 0.0, alt)
        else:
            loss = prune_loss(freq[piece], total, [freq[p] for p in alt])
            out[piece] = Analysis(CANDIDATE, freq[piece], loss, alt)
    return tokens, out


def em_round(word_counts: Mapping[str, int], scores: dict[str, float], characters: set[str]) -> tuple[float, dict[str, float]]:
    """One E-step and M-step: the log-likelihood before, and the new scores."""
    loglik, expected = e_step(word_counts, scores)
    return loglik, m_step(expected, characters)


def prune(word_counts: Mapping[str, int], scores: dict[str, float], desired: int) -> dict[str, float]:
    """The pieces (with their scores) a pruning keeps."""
    _, analysis = analyze(word_counts, scores)
    pieces = list(scores)
    keep = pruned([analysis[p].kind for p in pieces], [analysis[p].loss for p in pieces], shrunk_size(len(pieces), desired))
    return {pieces[i]: scores[pieces[i]] for i in keep}


def finalize(word_counts: Mapping[str, int], scores: dict[str, float], size: int) -> dict[str, float]:
    """The final pieces: none split by its own best segmentation, the best scores."""
    _, analysis = analyze(word_counts, scores)
    pieces = list(scores)
    keep = finalized([analysis[p].kind for p in pieces], [scores[p] for p in pieces], size)
    return {pieces[i]: scores[pieces[i]] for i in keep}


def train_unigram_reference(
    word_counts: Mapping[str, int], vocab_size: int, special_tokens: Sequence[str] = SPECIAL_TOKENS, seed_size: int = SEED_SIZE
) -> list[dict[str, float]]:
    """The pieces and scores after each round, the last one final."""
    scores = seed_pieces(word_counts, seed_size)
    characters = {p for p in scores if len(p) == 1}
    check_vocab_size(vocab_size, special_tokens, len(characters))
    desired = desired_size(vocab_size)
    rounds = []
    while True:
        for _ in range(SUB_ITERATIONS):
            _, scores = em_round(word_counts, scores, characters)
        scores = prune(word_counts, scores, desired)
        rounds.append(scores)
        if len(scores) <= desired:
            break
    rounds.append(finalize(word_counts, scores, vocab_size - len(special_tokens)))
    return rounds
