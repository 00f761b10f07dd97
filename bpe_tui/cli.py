"""The ``bpe-tui`` command: ``train``, ``race``, ``encode``, ``compare``, ``decode``, ``check``, ``serve`` and ``explain``.

Bad input ends with one line on stderr and exit status 2, never a traceback; an interrupted
command (Ctrl-C) with exit status 130.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable, Sequence
from importlib import metadata
from typing import NoReturn

from engine import BpeError
from engine.corpus.pretokenize import PATTERNS
from engine.errors import one_line
from engine.train import ALGORITHMS


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, exit 2
        self.exit(2, f"bpe-tui: {message}\n")


def installed_version() -> str:
    """The version pip installed, from the package's metadata (one source: pyproject.toml)."""
    try:
        return metadata.version("bpe-tui")
    except metadata.PackageNotFoundError:  # a source tree on sys.path, never installed
        return "(not installed: pip install -e .)"


SIZE_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def memory_size(text: str) -> int:
    """A size as ``--max-memory`` takes it: bytes, or a number with K, M, G or T (powers of
    1024; ``B``, ``iB`` after it allowed): ``512M``, ``1.5G``."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(?:I?B)?\s*", text.upper())
    if not match:
        raise argparse.ArgumentTypeError(f"{text!r} is not a size: give bytes or a number with K, M, G or T (512M, 8G)")
    return int(float(match[1]) * SIZE_UNITS[match[2]])


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="bpe-tui", description="Train byte-level BPE tokenizers and watch every merge.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {installed_version()}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    train = _corpus_options(sub.add_parser("train", help="train a tokenizer and watch the merges"))
    train.add_argument("--headless", action="store_true", help="no TUI: progress, summary, files")
    train.add_argument("--out", metavar="DIR", help="where to write tokenizer.json, vocab.json, merges.txt")
    train.add_argument("--resume", metavar="DIR", help="continue a saved run on the same corpus and settings")
    train.add_argument(
        "--save-counts",
        metavar="FILE",
        help="save the pre-token counts, to train again with --counts; kept in FILE.parts as they are counted, "
        "so a stopped count goes on where it stopped",
    )
    train.add_argument(
        "--max-memory",
        type=memory_size,
        metavar="SIZE",
        help="memory to train within (512M, 8G): past it, counts spill to disk and are joined at the end, "
        "and merging keeps the positions of fewer pairs, finding the others' again when needed",
    )
    train.add_argument("--counts", metavar="FILE", help="train from saved counts instead of a corpus")
    train.add_argument(
        "--dask", metavar="WHERE", help="count on a Dask cluster: local[:N] starts N local workers, or a scheduler tcp://HOST:8786"
    )

    race = _corpus_options(sub.add_parser("race", help="race the recount-everything trainer against the optimized one"))
    race.add_argument("--headless", action="store_true", help="no TUI: a progress line per second, then the results")
    train.add_argument("--classic", action="store_true", help="classic word-level BPE with </w> (strings, not bytes)")
    train.add_argument(
        "--algorithm",
        choices=list(ALGORITHMS),
        help="bpe (default: byte-level, merges by frequency), wordpiece (BERT: merges by likelihood, words as BERT cuts them) "
        "or unigram (SentencePiece's: a large vocabulary pruned by EM, words cut at spaces)",
    )
    train.add_argument("--lowercase", action="store_true", help="with --algorithm wordpiece: lowercase the text first")
    train.add_argument(
        "--words", choices=["whitespace", "punct"], help="with --classic: cut words at whitespace (default) or as \\w+|[^\\w\\s]"
    )
    train.add_argument(
        "--follow", action="append", default=[], metavar="WORD", help="follow WORD through training in its own panel (repeatable)"
    )
    train.add_argument(
        "--trace", metavar="FILE", help="with --headless: write the merges with their counts, ties and changes to FILE (.csv or .json)"
    )

    encode = sub.add_parser("encode", help="step through an encode, merge by merge")
    encode.add_argument("--model", required=True, metavar="PATH", help=MODEL_HELP)
    _pattern_option(encode)
    source = encode.add_mutually_exclusive_group()
    source.add_argument("--text", help="text to encode")
    source.add_argument(
        "--file",
        nargs="+",
        metavar="FILE",
        help="file whose text to encode (- : standard input); with --out: files, directories or globs (.jsonl, .parquet, .gz, .zst too)",
    )
    encode.add_argument("--headless", action="store_true", help="print the tokens and exit")
    encode.add_argument("--json", action="store_true", help="with --headless: a JSON list of {id, bytes, text}")
    encode.add_argument("--out", metavar="IDS", help="with --file: write the ids of every document to IDS (.bin raw, .npy NumPy)")
    encode.add_argument("--eot", action="store_true", help="with --out: append <|endoftext|> after each document")
    encode.add_argument("--text-field", default="text", metavar="NAME", help="JSONL field / Parquet column of the text (default text)")
    encode.add_argument("--workers", type=int, default=None, help="with --out: threads encoding (default: all cores)")
    encode.add_argument("--errors", choices=["strict", "replace"], default="strict", help="with --out: invalid UTF-8 handling")
    encode.add_argument("--skip-bad-records", action="store_true", help="with --out: skip and count bad JSONL lines / Parquet rows")
    encode.add_argument("--skip-bad-inputs", action="store_true", help="with --out: skip and list bad files found in directories / globs")
    encode.add_argument("--stdin-format", choices=["text", "jsonl"], help="with --out: how to read --file - (default text)")

    compare = sub.add_parser("compare", help="one text, many tokenizers side by side")
    source = compare.add_mutually_exclusive_group()
    source.add_argument("--text", help="text to tokenize")
    source.add_argument("--file", nargs=1, metavar="FILE", help="file whose text to tokenize")
    compare.add_argument(
        "--model",
        action="append",
        metavar="PATH",
        help="a row more (repeatable): a tokenizer dir, GPT-2's vocab.json + merges.txt dir, any HF tokenizer.json, a .tiktoken rank "
        "file, a SentencePiece .model",
    )
    _pattern_option(compare)
    compare.add_argument(
        "--corpus", metavar="FILE", help="the corpus of the word, BPE, WordPiece and Unigram rows; default: the bundled sample"
    )
    compare.add_argument(
        "--vocab-size", type=int, default=1000, help="vocabulary size of the BPE, WordPiece and Unigram rows (default 1000)"
    )
    compare.add_argument("--errors", choices=["strict", "replace"], default="strict", help="invalid UTF-8 in --corpus, as train takes it")
    compare.add_argument("--headless", action="store_true", help="print the rows and a table, and exit")
    compare.add_argument("--json", action="store_true", help="with --headless: the comparison as JSON")

    decode = sub.add_parser("decode", help="print the text of token ids")
    decode.add_argument("--model", required=True, metavar="PATH", help=MODEL_HELP)
    _pattern_option(decode)
    decode.add_argument("ids", nargs="*", metavar="ID", help="token ids (default: read from stdin, separated by spaces or commas)")
    decode.set_defaults(has_screen=False)

    serve = sub.add_parser(
        "serve",
        help="serve the app to web browsers (needs bpe-tui[web])",
        usage="bpe-tui serve [COMMAND [ARGS ...]] [--host HOST] [--port PORT] [--public-url URL] [--max-sessions N]",
        description="Serve `bpe-tui COMMAND ARGS` (default: train) to web browsers, one app process per tab.",
        allow_abbrev=False,  # the served command's options pass through, never taken for ours
    )
    serve.add_argument(
        "--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1: this machine only; 0.0.0.0: the network)"
    )
    serve.add_argument("--port", type=int, default=8000, help="port to listen on (default 8000)")
    serve.add_argument("--public-url", metavar="URL", help="the address browsers use, when not http://HOST:PORT")
    serve.add_argument(
        "--max-sessions",
        type=int,
        default=40,  # a class of 30 with some to spare; 40 sessions fit in 8 GB (docs/screens.md)
        metavar="N",
        help="browser tabs open at once; past that a new one is told the class is full (default 40)",
    )
    serve.set_defaults(has_screen=False)

    _check_parser(sub)

    explain = sub.add_parser("explain", help="what each panel of a screen shows, and its keys")
    explain.add_argument("screen", nargs="?", default="train", help="train (default), encode, compare, race or check")
    explain.add_argument("--algorithm", choices=list(ALGORITHMS), help="with train or encode: that screen's help for that algorithm")
    explain.set_defaults(has_screen=False)
    return parser


MODEL_HELP = "tokenizer.json, a directory with it or vocab.json + merges.txt, a .tiktoken rank file, or a SentencePiece .model"


def _check_parser(sub: argparse._SubParsersAction[_Parser]) -> None:
    """``check``: a student's trainer on a corpus, or their encoder on a model's files."""
    check = sub.add_parser(
        "check",
        help="hold your own BPE trainer (or encoder) against the exact one, opened where it first goes wrong",
        description="Run your trainer FILE.py:FUNCTION(input_path, vocab_size, special_tokens) on CORPUS, or build your "
        "encoder FILE.py:CLASS(vocab, merges, special_tokens) from --model DIR, and hold what it gives against bpe-tui's "
        "exact BPE. Exit status 0: everything agrees; 1: something differs; 2: nothing to compare.",
    )
    check.add_argument("target", metavar="FILE.py:NAME", help="your trainer function, or (with --model) your encoder class")
    check.add_argument("corpus", nargs="?", metavar="CORPUS", help="a plain-text file to train on (default: the bundled sample)")
    check.add_argument("--vocab-size", type=int, default=None, help="vocabulary size (default 1000)")
    check.add_argument(
        "--special-token", action="append", dest="special_tokens", metavar="TOKEN", help="special token (repeatable; default <|endoftext|>)"
    )
    check.add_argument(
        "--model", metavar="DIR", help="check an encoder class, built from this model's vocabulary, merges and special tokens"
    )
    source = check.add_mutually_exclusive_group()
    source.add_argument("--text", help="with --model: a text to encode first, then the built-in hard texts")
    source.add_argument("--file", nargs=1, metavar="FILE", help="with --model: a file whose text to encode first")
    check.add_argument("--timeout", type=float, default=600.0, metavar="SECONDS", help="stop your code after SECONDS (default 600)")
    check.add_argument("--headless", action="store_true", help="no TUI: the seconds on stderr while your code runs, then the verdict")


def _pattern_option(parser: argparse.ArgumentParser) -> None:
    """The pre-tokenizer of a rank file that is not a published one (cl100k_base, o200k_base)."""
    parser.add_argument(
        "--pattern",
        metavar="REGEX",
        help=f"the pre-tokenizer of a .tiktoken rank file other than cl100k_base and o200k_base: {', '.join(PATTERNS)} or a regex",
    )


def _corpus_options(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """What to train on and how: the options ``train`` and ``race`` share."""
    parser.add_argument(
        "inputs",
        nargs="*",
        metavar="FILE",
        help="corpus files, directories, glob patterns or - (standard input): UTF-8 text, .jsonl, .parquet, optionally .gz/.zst "
        "(default: the bundled sample)",
    )
    parser.add_argument("--vocab-size", type=int, default=1000, help="vocabulary size (default 1000)")
    parser.add_argument(
        "--special-token",
        action="append",
        dest="special_tokens",
        metavar="TOKEN",
        help="special token (repeatable; default <|endoftext|>)",
    )
    parser.add_argument("--pattern", choices=list(PATTERNS), help="pre-tokenizer (default gpt2; each runs compiled)")
    parser.add_argument("--workers", type=int, default=None, help="counting workers above 16 MB: this process + N-1 (default: all cores)")
    parser.add_argument("--errors", choices=["strict", "replace"], default="strict", help="invalid UTF-8 handling")
    parser.add_argument("--text-field", default="text", metavar="NAME", help="JSONL field / Parquet column of the text (default text)")
    parser.add_argument("--skip-bad-records", action="store_true", help="skip and count bad JSONL lines / Parquet rows")
    parser.add_argument(
        "--skip-bad-inputs",
        action="store_true",
        help="skip and list bad files found in directories / globs (broken links, loops, unreadable, special, unknown format)",
    )
    parser.add_argument("--stdin-format", choices=["text", "jsonl"], help="how to read - (standard input): text (default) or jsonl")
    return parser


def prepare(args: argparse.Namespace) -> None:
    """Check what a command names before its screen opens: ``serve`` checks once what each
    browser tab would open."""
    if args.command == "train":
        from bpe_tui.train.command import prepare as prepare_train

        prepare_train(args)
    elif args.command == "encode":
        from bpe_tui.encode.command import prepare as prepare_encode

        prepare_encode(args)


def warm(args: argparse.Namespace) -> None:
    """What every browser tab of ``bpe-tui serve`` would do alike, done once in the warm
    parent the tabs fork from: the app imported, a served ``train``'s corpus read."""
    import bpe_tui.app  # noqa: F401  (imported here, each tab's app forks with it)

    if args.command == "train":
        from bpe_tui.train.command import load_ahead

        load_ahead(args)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args, rest = parser.parse_known_args(argv)
    if rest and args.command != "serve":  # only serve passes arguments on
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    if args.command == "serve":
        from bpe_tui.serve.command import run_serve

        return _said(lambda: run_serve(args, rest, parser, prepare, run, warm))
    return run(args)


def run(args: argparse.Namespace) -> int:
    """Run a parsed command other than ``serve``: each browser tab of ``bpe-tui serve`` runs
    the command the server parsed once, building no parser of its own."""
    return _said(lambda: _run_command(args))


def _said(command: Callable[[], int]) -> int:
    """``command()``, its bad input said in one line (exit status 2), Ctrl-C in another (130),
    running out of memory in a third (1)."""
    try:
        return command()
    except BpeError as e:
        print(f"bpe-tui: {one_line(str(e))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("bpe-tui: interrupted", file=sys.stderr)
        return 130
    except MemoryError as e:
        print(f"bpe-tui: out of memory{f' ({one_line(str(e))})' if str(e) else ''}; try fewer --workers, or --max-memory", file=sys.stderr)
        return 1


def _run_command(args: argparse.Namespace) -> int:
    if args.command == "check":
        from bpe_tui.check.command import run_check_command

        return run_check_command(args)
    if args.command == "explain":
        from bpe_tui.help.command import run_explain

        return run_explain(args)
    if args.command == "train":
        from bpe_tui.train.command import run_train

        return run_train(args)
    if args.command == "race":
        from bpe_tui.race.command import run_race

        return run_race(args)
    if args.command == "compare":
        from bpe_tui.compare.command import run_compare

        return run_compare(args)
    if args.command == "decode":
        from bpe_tui.encode.decode_command import run_decode

        return run_decode(args)
    from bpe_tui.encode.command import run_encode

    return run_encode(args)


if __name__ == "__main__":
    sys.exit(main())
