"""What a training run is asked for (``TrainOptions``): built once from the command line,
checked once here, then carried as one value to the headless run, the training screen, the
screen's trainer process and the race."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from engine.corpus.counting import Progress
from engine.corpus.dask_count import check_target
from engine.corpus.shards import CountSettings, first_text, plan_shards
from engine.corpus.sources import JSONL, PARQUET, STDIN, TEXT, describe, expand_inputs
from engine.encode.tokenizer import Tokenizer, model_kind
from engine.errors import ResumeError, SettingsError, counted
from engine.formats.atomic import check_writable_dir, check_writable_file
from engine.formats.tokenizer_files import MERGES_TXT, TOKENIZER_JSON, VOCAB_JSON
from engine.train import ALGORITHMS
from engine.train.classic import MODEL_FILE, ClassicTrainer
from engine.train.trainer import Trainer, check_settings, count_corpus, first_merge_id, load_saved_counts
from engine.train.unigram import rule as unigram_rule
from engine.train.unigram.trainer import UnigramTrainer
from engine.train.wordpiece.rule import SPECIAL_TOKENS, UNKNOWN
from engine.train.wordpiece.trainer import WordPieceTrainer

DEFAULT_SPECIAL = "<|endoftext|>"
Merges = list[tuple[bytes, bytes]]
Inputs = Sequence[str | Path]
"""Corpus files, directories and glob patterns."""

WORD_LEVEL_REFUSES = {
    "pattern": "--pattern does not apply to {flag}: it cuts words {how}",
    "workers": "--workers does not apply to {flag}: it counts its words in one process",
    "resume": "--resume does not apply to {flag}: train it again (it starts from scratch)",
    "counts": "--counts does not apply to {flag}: it reads its words from one plain-text file",
    "save_counts": "--save-counts does not apply to {flag}: it reads its words from one plain-text file",
    "skip_bad_records": "--skip-bad-records does not apply to {flag}: it reads one plain-text file",
    "skip_bad_inputs": "--skip-bad-inputs does not apply to {flag}: it reads one plain-text file",
    "stdin_format": "--stdin-format does not apply to {flag}: it reads one plain-text file",
    "dask": "--dask does not apply to {flag}: it counts its words in one process",
    "max_memory": "--max-memory does not apply to {flag}: it counts its words in one process, in memory",
}
"""Options of byte-level training that the word-level trainers (classic BPE, WordPiece,
Unigram) have no use for, and the line refusing each."""

WORD_CUTS = {
    "wordpiece": "as BERT does",
    "unigram": "at spaces, as SentencePiece does",
}
"""How each word-level algorithm cuts its words, as its refusals say it."""

AnyTrainer = Trainer | ClassicTrainer | WordPieceTrainer
"""The trainers that merge (``load``); Unigram prunes, a round at a time (``load_unigram``)."""

_LOADED_AHEAD: dict[tuple[TrainOptions, tuple[str, ...]], AnyTrainer] = {}
"""Trainers at merge 0 made by ``load_ahead``, by options and inputs: the first ``load`` of
the same in this process, or in each process forked from it, takes its trainer from here."""


@dataclass(frozen=True)
class TrainOptions:
    """What a training run is asked for: carried as one value to the headless run, the
    training screen and the screen's trainer process."""

    vocab_size: int
    special_tokens: tuple[str, ...]
    pattern: str = "gpt2"
    workers: int | None = None
    errors: str = "strict"
    text_field: str = "text"
    skip_bad_records: bool = False
    counts: str | None = None
    """Saved counts to train from instead of reading a corpus."""
    save_counts: str | None = None
    """Where to save the corpus's counts once they are counted."""
    dask: str | None = None
    """Count on a Dask cluster: ``local[:N]`` or a scheduler address."""
    classic: str | None = None
    """Classic word-level BPE with ``</w>``, its words cut this way ("whitespace" or
    "punct"); None: byte-level BPE."""
    skip_bad_inputs: bool = False
    stdin_format: str = TEXT
    algorithm: str = "bpe"
    """``bpe`` (byte-level, or classic with ``classic``), ``wordpiece`` or ``unigram``."""
    lowercase: bool = False
    """WordPiece only: lowercase the text before cutting it into words."""
    max_memory: int | None = None
    """Bytes counting's tallies may hold together (past it they spill to disk as runs), and
    about what training holds (``Trainer.bound_memory``)."""

    @classmethod
    def checked(
        cls,
        inputs: Sequence[str],
        vocab_size: int,
        special_tokens: Sequence[str] | None = None,
        pattern: str | None = None,
        workers: int | None = None,
        errors: str = "strict",
        text_field: str = "text",
        skip_bad_records: bool = False,
        counts: str | None = None,
        save_counts: str | None = None,
        dask: str | None = None,
        classic: bool = False,
        words: str | None = None,
        resume: str | None = None,
        skip_bad_inputs: bool = False,
        stdin_format: str | None = None,
        algorithm: str | None = None,
        lowercase: bool = False,
        max_memory: int | None = None,
    ) -> TrainOptions:
        """The options as given on the command line (None: not given), checked: a
        ``SettingsError`` names the first that cannot work, before any corpus is read.

        Every path named is checked too: the corpus files exist and have a known format,
        and ``save_counts`` can be written.
        """
        if algorithm is not None and algorithm not in ALGORITHMS:
            raise SettingsError(f"--algorithm {algorithm}: not one of {', '.join(ALGORITHMS)}")
        wordpiece = algorithm == "wordpiece"
        unigram = algorithm == "unigram"
        if lowercase and not wordpiece:
            keeps = "Unigram" if unigram else "byte-level BPE"
            raise SettingsError(f"--lowercase goes with --algorithm wordpiece: {keeps} keeps the text as it is")
        if classic and algorithm in WORD_CUTS:
            raise SettingsError(f"--classic is classic BPE: it does not go with --algorithm {algorithm}")
        if classic or algorithm in WORD_CUTS:
            given = {
                "pattern": pattern,
                "workers": workers,
                "resume": resume,
                "counts": counts,
                "save_counts": save_counts,
                "skip_bad_records": skip_bad_records,
                "dask": dask,
                "skip_bad_inputs": skip_bad_inputs,
                "stdin_format": stdin_format,
                "max_memory": max_memory,
            }
            refused = next((name for name, value in given.items() if value), None)
            if classic:
                flag, how = "--classic", "at whitespace (or --words punct)"
            else:
                flag, how = f"--algorithm {algorithm}", WORD_CUTS[str(algorithm)]
            if refused is not None:
                raise SettingsError(WORD_LEVEL_REFUSES[refused].format(flag=flag, how=how))
            if len(inputs) > 1:
                raise SettingsError(f"{flag} trains on one plain-text file")
            if inputs:
                _check_plain_text(str(inputs[0]), flag)
        if classic:
            if special_tokens:
                raise SettingsError("--special-token does not apply to --classic: its vocabulary is strings, with no special tokens")
            options = cls(vocab_size, (), errors=errors, classic=words or "whitespace")
        elif wordpiece:
            if words is not None:
                raise SettingsError("--words goes with --classic: WordPiece cuts words as BERT does")
            specials = SPECIAL_TOKENS if special_tokens is None else tuple(special_tokens)
            if UNKNOWN not in specials:
                raise SettingsError(f"WordPiece needs {UNKNOWN} among its special tokens: it stands for a word it cannot cover")
            options = cls(vocab_size, specials, errors=errors, algorithm="wordpiece", lowercase=lowercase)
        elif unigram:
            if words is not None:
                raise SettingsError("--words goes with --classic: Unigram cuts words at spaces, as SentencePiece does")
            specials = unigram_rule.SPECIAL_TOKENS if special_tokens is None else tuple(special_tokens)
            unigram_rule.check_special_tokens(specials)  # the characters are counted once the corpus is read
            if vocab_size <= len(specials):
                raise SettingsError(
                    f"vocab size {vocab_size:,} leaves no room beside the {counted(len(specials), 'special token')} for the characters, "
                    "which Unigram keeps every one of"
                )
            options = cls(vocab_size, specials, errors=errors, algorithm="unigram")
        else:
            if words is not None:
                raise SettingsError("--words goes with --classic: byte-level training cuts pre-tokens with --pattern")
            if dask is not None:
                _check_dask(dask, counts, workers)
            specials = (DEFAULT_SPECIAL,) if special_tokens is None else tuple(special_tokens)
            check_settings(vocab_size, specials)
            if workers is not None and workers < 1:
                raise SettingsError("--workers must be at least 1")
            if counts and inputs:
                raise SettingsError("--counts trains from saved counts: give it no corpus files")
            if counts and save_counts:
                raise SettingsError("--save-counts saves the counts of a corpus: it does not go with --counts")
            if max_memory is not None:
                _check_max_memory(max_memory, dask)
            if stdin_format is not None and STDIN not in inputs:
                raise SettingsError("--stdin-format says how to read standard input: it goes with - among the inputs")
            options = cls(
                vocab_size,
                specials,
                pattern or "gpt2",
                workers,
                errors,
                text_field,
                skip_bad_records,
                counts,
                save_counts,
                dask,
                skip_bad_inputs=skip_bad_inputs,
                stdin_format=stdin_format or TEXT,
                max_memory=max_memory,
            )
        if save_counts:
            check_writable_file(Path(save_counts), "--save-counts")
        if inputs:  # missing files, bad files, globs that match nothing, unknown extensions: one line now
            expand_inputs(inputs, options.skip_bad_inputs, options.stdin_format)
        return options

    @property
    def merges_planned(self) -> int | None:
        """None for the word-level trainers until their corpus is read: their alphabet comes
        from the text."""
        return self.vocab_size - first_merge_id(self.special_tokens) if self.byte_level else None

    @property
    def count_settings(self) -> CountSettings:
        return CountSettings(
            self.pattern, self.special_tokens, self.text_field, self.errors, self.skip_bad_records, self.skip_bad_inputs, self.stdin_format
        )

    def count(self, inputs: Inputs, progress: Progress | None = None) -> Counter[bytes]:
        """The pre-token counts of ``inputs`` (or the saved ``counts``) with these settings."""
        if self.counts is not None:
            return load_saved_counts(self.counts, self.pattern, self.special_tokens).counts
        return count_corpus(inputs, self.count_settings, self.workers, progress, self.dask)[0].counter()

    @property
    def file_names(self) -> tuple[str, ...]:
        """The files a save writes into its directory."""
        if self.classic:
            return (MODEL_FILE,)
        if self.algorithm == "unigram":
            return (TOKENIZER_JSON,)
        return (TOKENIZER_JSON, "vocab.txt") if self.algorithm == "wordpiece" else (TOKENIZER_JSON, VOCAB_JSON, MERGES_TXT)

    @property
    def saves(self) -> str:
        """The files a save writes, as a sentence names them."""
        *first, last = self.file_names
        return f"{', '.join(first)} and {last}" if first else last

    def check_out(self, directory: str | Path, option: str = "--out") -> None:
        """``SettingsError`` if a save could not write its files into ``directory``: checked
        before the corpus is read, not after it is trained."""
        check_writable_dir(Path(directory), option, self.file_names)

    @property
    def byte_level(self) -> bool:
        """Byte-level BPE: its model opens in the encode view, and where its pairs lie shows
        in the pair-in-the-corpus panel (classic BPE, WordPiece and Unigram have neither)."""
        return not self.classic and self.algorithm == "bpe"

    def load(self, inputs: Inputs, progress: Progress | None = None) -> AnyTrainer:
        """Count ``inputs`` (or load ``counts``) into a trainer at merge 0 (Unigram's rounds:
        ``load_unigram``)."""
        if self.algorithm == "unigram":
            raise SettingsError("Unigram trains by rounds, not merges: load it with load_unigram")
        ahead = _LOADED_AHEAD.pop((self, tuple(map(str, inputs))), None)
        if ahead is not None:
            return ahead
        if self.classic:
            return ClassicTrainer.from_file(inputs[0], self.vocab_size, self.classic, progress, self.errors)
        if self.algorithm == "wordpiece":
            return WordPieceTrainer.from_file(inputs[0], self.vocab_size, self.special_tokens, self.lowercase, progress, self.errors)
        if self.counts is not None:
            trainer = Trainer.from_counts_file(self.counts, self.vocab_size, self.special_tokens, self.pattern, progress)
        else:
            trainer = self._count(inputs, progress)
        if self.max_memory is not None:
            trainer.bound_memory(self.max_memory)
        return trainer

    def _count(self, inputs: Inputs, progress: Progress | None) -> Trainer:
        return Trainer.from_files(
            inputs,
            self.vocab_size,
            self.special_tokens,
            pattern=self.pattern,
            workers=self.workers,
            errors=self.errors,
            progress=progress,
            text_field=self.text_field,
            skip_bad_records=self.skip_bad_records,
            save_counts=self.save_counts,
            dask=self.dask,
            skip_bad_inputs=self.skip_bad_inputs,
            stdin_format=self.stdin_format,
            max_memory=self.max_memory,
        )

    def load_ahead(self, inputs: Inputs) -> None:
        """Count ``inputs`` (or load ``counts``) into a trainer at merge 0 now, for the first
        ``load`` of them later in this process, or in each process forked from it: a served
        class's tabs fork from one warm parent, which reads the corpus they all train on once,
        and their trainers share its pages until their merges write to them. Not Unigram's,
        which trains by rounds, nor on a Dask cluster, whose client's threads would be forked
        too."""
        if self.algorithm != "unigram" and self.dask is None:
            _LOADED_AHEAD[self, tuple(map(str, inputs))] = self.load(inputs)

    def load_unigram(self, inputs: Inputs, progress: Progress | None = None) -> UnigramTrainer:
        """Count the words of ``inputs[0]`` into a Unigram trainer at round 0, its seeds
        chosen; ``SettingsError`` when the vocabulary cannot hold the special tokens and
        every character of the corpus."""
        return UnigramTrainer.from_file(inputs[0], self.vocab_size, self.special_tokens, progress, self.errors)

    def opening_text(self, inputs: Inputs, chars: int = 240) -> str | None:
        """The start of the first document, cut at a line or word end: something to encode
        (None when training from saved counts: there is no text)."""
        if not inputs:
            return None
        settings = self.count_settings
        sources = expand_inputs(inputs, settings.skip_bad_inputs, settings.stdin_format)
        if any(s.stream for s in sources):
            return None  # read once, and by the trainer
        shards = plan_shards(sources, settings)
        text = next((t for t in (first_text(shard, settings, chars) for shard in shards) if t), "")
        cut = max(text.rfind("\n"), text.rfind(" "))
        return text[:cut] if len(text) == chars and cut > 0 else text

    def files(self, trainer: AnyTrainer | UnigramTrainer) -> dict[str, str]:
        """The model as trained so far: what ``save`` writes, by file name."""
        if isinstance(trainer, ClassicTrainer):
            return trainer.model().files()
        if isinstance(trainer, UnigramTrainer):
            from engine.encode.unigram import UnigramTokenizer

            return UnigramTokenizer.from_trainer(trainer).files()
        if isinstance(trainer, WordPieceTrainer):
            from engine.encode.wordpiece import WordPieceTokenizer

            return WordPieceTokenizer.from_trainer(trainer).files()
        return Tokenizer.from_trainer(trainer).files()

    def save(self, trainer: AnyTrainer | UnigramTrainer, directory: str | Path) -> list[Path]:
        """Write the model as trained so far to ``directory``, each file atomically."""
        if isinstance(trainer, ClassicTrainer):
            return [trainer.model().save(directory)]
        if isinstance(trainer, UnigramTrainer):
            from engine.encode.unigram import UnigramTokenizer

            return UnigramTokenizer.from_trainer(trainer).save_dir(directory)
        if isinstance(trainer, WordPieceTrainer):
            from engine.encode.wordpiece import WordPieceTokenizer

            return WordPieceTokenizer.from_trainer(trainer).save_dir(directory)
        return Tokenizer.from_trainer(trainer).save_dir(directory)

    def saved_merges(self, resume: str) -> Merges:
        """The merges saved in ``resume`` (a directory or a tokenizer file), once its settings
        are found to match these; ``ResumeError`` if they do not."""
        saved = Tokenizer.load(resume)
        if not isinstance(saved, Tokenizer):
            raise ResumeError(f"{resume}: a {model_kind(saved)} model: --resume continues byte-level BPE")
        if saved.pattern != self.pattern:
            raise ResumeError(f"{resume}: trained with --pattern {saved.pattern}, not {self.pattern}: resume with the same settings")
        special_tokens = list(self.special_tokens)
        if saved.special_tokens != special_tokens:
            raise ResumeError(
                f"{resume}: trained with special tokens {saved.special_tokens}, not {special_tokens}: resume with the same settings"
            )
        if self.merges_planned is not None and len(saved.merges) > self.merges_planned:
            raise ResumeError(
                f"{resume}: has {len(saved.merges):,} merges already, more than --vocab-size {self.vocab_size} leaves room for"
            )
        return saved.merges


MIN_MEMORY = 64 << 20
"""The least ``--max-memory`` takes: the interpreter, the reader's blocks and a tally's start."""


def _check_max_memory(max_memory: int, dask: str | None) -> None:
    if dask is not None:
        raise SettingsError("--max-memory bounds counting on this machine: it does not go with --dask")
    if max_memory < MIN_MEMORY:
        raise SettingsError(f"--max-memory {max_memory:,} bytes is too little to count in: give at least {MIN_MEMORY >> 20} MB")


def _check_plain_text(path: str, flag: str) -> None:
    """``SettingsError`` unless ``path`` names plain text as stored: a word-level trainer reads
    its bytes as they are, neither decompressing them nor taking a JSONL or Parquet field."""
    source = describe(path, 0)
    if source.format != TEXT or source.compression:
        compressed = f"{source.compression}-compressed" if source.compression else ""
        what = " ".join(filter(None, (compressed, {JSONL: "JSONL", PARQUET: "Parquet"}.get(source.format))))
        raise SettingsError(f"{flag} reads its words from one plain-text file: {path} is {what}")


def _check_dask(dask: str, counts: str | None, workers: int | None) -> None:
    """Refuse --dask with options it cannot go with, or a value that cannot work, up front."""
    if counts:
        raise SettingsError("--dask counts a corpus: it does not go with --counts")
    if workers is not None:
        raise SettingsError("--workers sets the processes counting on this machine: with --dask the cluster counts")
    check_target(dask)


def replay_saved(trainer: Trainer, merges: Merges, saved: str, corpus: str) -> None:
    """Redo a saved run's merges on ``trainer``; ``ResumeError`` if it would choose others."""
    if not trainer.replay(merges):
        raise ResumeError(
            f"{saved}: its merges are not the ones {corpus} gives with these settings (another corpus, "
            "or other --errors?): resume it on the corpus it was trained on, or train from scratch"
        )
