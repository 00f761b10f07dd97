"""The ``bpe-tui`` command: ``train``, ``encode`` and ``decode``.

Bad input ends with one line on stderr and exit status 2, never a traceback; an interrupted
command (Ctrl-C) with exit status 130.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from engine import BpeError


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2
        self.exit(2, f"bpe-tui: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="bpe-tui", description="Train byte-level BPE tokenizers and watch every merge.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    train = sub.add_parser("train", help="train a tokenizer and watch the merges")
    train.add_argument(
        "inputs",
        nargs="*",
        metavar="FILE",
        help="corpus files, directories or glob patterns: UTF-8 text, .jsonl, .parquet, optionally .gz/.zst "
        "(default: the bundled sample)",
    )
    train.add_argument("--vocab-size", type=int, default=1000, help="vocabulary size (default 1000)")
    train.add_argument(
        "--special-token",
        action="append",
        dest="special_tokens",
        metavar="TOKEN",
        help="special token (repeatable; default <|endoftext|>)",
    )
    train.add_argument("--pattern", choices=["gpt2", "gpt4"], default="gpt2", help="pre-tokenizer regex")
    train.add_argument("--headless", action="store_true", help="no TUI: progress, summary, files")
    train.add_argument("--out", metavar="DIR", help="where to write tokenizer.json, vocab.json, merges.txt")
    train.add_argument("--workers", type=int, default=None, help="processes for counting (default: all cores)")
    train.add_argument("--errors", choices=["strict", "replace"], default="strict", help="invalid UTF-8 handling")
    train.add_argument("--resume", metavar="DIR", help="continue a saved run on the same corpus and settings")
    train.add_argument("--text-field", default="text", metavar="NAME", help="JSONL field / Parquet column of the text (default text)")
    train.add_argument("--skip-bad-records", action="store_true", help="skip and count bad JSONL lines / Parquet rows")
    train.add_argument("--save-counts", metavar="FILE", help="save the pre-token counts, to train again with --counts")
    train.add_argument("--counts", metavar="FILE", help="train from saved counts instead of a corpus")
    train.add_argument(
        "--dask", metavar="WHERE", help="count on a Dask cluster: local[:N] starts N local workers, or a scheduler tcp://HOST:8786"
    )

    encode = sub.add_parser("encode", help="step through an encode, merge by merge")
    encode.add_argument("--model", required=True, metavar="PATH", help="tokenizer.json, or a directory with it or vocab.json + merges.txt")
    source = encode.add_mutually_exclusive_group()
    source.add_argument("--text", help="text to encode")
    source.add_argument("--file", help="file whose text to encode")
    encode.add_argument("--headless", action="store_true", help="print the tokens and exit")
    encode.add_argument("--json", action="store_true", help="with --headless: a JSON list of {id, bytes, text}")

    decode = sub.add_parser("decode", help="print the text of token ids")
    decode.add_argument("--model", required=True, metavar="PATH", help="tokenizer.json, or a directory with it or vocab.json + merges.txt")
    decode.add_argument("ids", nargs="*", metavar="ID", help="token ids (default: read from stdin, separated by spaces or commas)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command == "train":
            from .train_cmd import run_train

            return run_train(args)
        if args.command == "decode":
            from .decode_cmd import run_decode

            return run_decode(args)
        from .encode_cmd import run_encode

        return run_encode(args)
    except BpeError as e:
        print(f"bpe-tui: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("bpe-tui: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
