"""The ``bpe-tui`` command: ``train``, ``encode``, ``decode``, ``serve`` and ``explain``.

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
    train.add_argument("file", nargs="?", help="corpus (UTF-8 text); default: the bundled sample")
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
    decode.set_defaults(has_screen=False)

    serve = sub.add_parser(
        "serve",
        help="serve the app to web browsers (needs bpe-tui[web])",
        usage="bpe-tui serve [COMMAND [ARGS ...]] [--host HOST] [--port PORT] [--public-url URL]",
        description="Serve `bpe-tui COMMAND ARGS` (default: train) to web browsers, one app process per tab.",
        allow_abbrev=False,  # the served command's options pass through, never taken for ours
    )
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1: this machine only; 0.0.0.0: the network)")
    serve.add_argument("--port", type=int, default=8000, help="port to listen on (default 8000)")
    serve.add_argument("--public-url", metavar="URL", help="the address browsers use, when not http://HOST:PORT")
    serve.set_defaults(has_screen=False)

    explain = sub.add_parser("explain", help="what each panel of a screen shows, and its keys")
    explain.add_argument("screen", nargs="?", default="train", help="train (default) or encode")
    explain.set_defaults(has_screen=False)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args, rest = parser.parse_known_args(argv)
    if rest and args.command != "serve":  # only serve passes arguments on
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    try:
        if args.command == "serve":
            from .serve_cmd import run_serve

            return run_serve(args, rest, parser)
        if args.command == "explain":
            from .explain_cmd import run_explain

            return run_explain(args)
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
