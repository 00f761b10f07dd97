"""JSONL records counted in C (``engine/corpus/_jsonl.h``, ``Tally.add_jsonl``): whatever line
the C reader takes, it reads as ``json.loads`` does; what it leaves, Python reads; a shard
counts the same, with the same errors, either way."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from engine import CorpusError, PreTokenizer
from engine.corpus import shards as shards_module
from engine.corpus.shards import CountSettings, Shard, count_shard
from engine.corpus.sources import JSONL

SPECIAL = "<|endoftext|>"
PIECES = [
    '{"text": "a b"}', '{"text": ', '"text"', '"id"', ": ", ", ", "{", "}", "[", "]", '"', "1", "-0.5e+3", "01", "true", "nul", "NaN",
    " ", "\t", "\r", "\x0b", "\x0c", "\x01", "x", "é", "你好", "😀", "\\n", "\\u00e9", "\\ud83d\\ude00", "\\ud800", "\\udc00", "\\x",
    "\\\\", '\\"', "\\/", SPECIAL, "don't",
]  # fmt: skip
BAD_BYTES = [b"\xff", b"\xed\xa0\x80", b"\xc0\xaf", b"\xe4\xb8"]
values = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**20), 10**20) | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=8,
)
texts = st.lists(
    st.sampled_from(["a", " b", "\n", "é", "你好 ", "😀", "\ud800", "\udc00", "\\", '"', "\x00", SPECIAL, " don't", "12345"]), max_size=8
).map("".join)


@st.composite
def records(draw: st.DrawFn) -> bytes:
    """A JSON object with a text field (or not, or twice), written in any of JSON's ways."""
    fields = draw(st.dictionaries(st.sampled_from(["id", "meta", "text ", "Text", "t\\u0065xt"]), values, max_size=3))
    parts = [json.dumps(k) + ":" + json.dumps(v) for k, v in fields.items()]
    for _ in range(draw(st.integers(0, 2))):
        text = draw(texts | values)
        parts.insert(
            draw(st.integers(0, len(parts))),
            '"text"' + draw(st.sampled_from([":", " : "])) + json.dumps(text, ensure_ascii=draw(st.booleans())),
        )
    space = draw(st.sampled_from(["", " ", "\t", " \r"]))
    return ("{" + space + ("," + space).join(parts) + space + "}").encode("utf-8", "surrogatepass")


@st.composite
def soup(draw: st.DrawFn) -> bytes:
    """JSON-like pieces and bytes that are not UTF-8, in any order."""
    pieces = draw(st.lists(st.sampled_from(PIECES).map(str.encode) | st.sampled_from(BAD_BYTES), max_size=8))
    return b"".join(pieces)


lines = (
    records()
    | soup()
    | st.builds(lambda r, i, b: r[:i] + b + r[i:], records(), st.integers(0, 40), st.sampled_from([*BAD_BYTES, b"x", b" ", b"\\"]))
)
PRETOK = PreTokenizer("gpt2", [SPECIAL])


ESCAPES = [rb"\ud83d\ude00", rb"\ud800", rb"\udc00", rb"\udc00\ud800", rb"\ud800\u0041", rb"\u00E9\u4F60", rb"\/\b\f\r\t", b"\x01", b"\x7f"]


@settings(max_examples=600, deadline=None)
@given(line=lines)
@example(line=b'{"text": "a", "text": "b"}')
@example(line=b'{"text": "a"} {}')
@example(line=b'{"text": "a"')
@example(line=b'{"a": [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]], "text": "x"}')
def test_a_line_the_c_reader_takes_is_read_as_json_loads_reads_it(line):
    check_line(line)


@pytest.mark.parametrize("escape", ESCAPES)
def test_escapes_are_read_as_json_loads_reads_them_or_left(escape):
    check_line(b'{"text": "a' + escape + b'"}')


def check_line(line: bytes) -> None:
    """Left to Python, or read as ``json.loads`` reads it."""
    tally = PRETOK.new_tally()
    stop, counted = tally.add_jsonl(line + b"\n", 0, b"text", (SPECIAL.encode(),))
    if stop == 0:  # left to Python
        assert counted == 0 and len(tally) == 0
        return
    assert (stop, counted) == (len(line) + 1, 1)
    if not line.strip():
        assert len(tally) == 0
        return
    record = json.loads(line.decode("utf-8"))
    assert isinstance(record, dict) and isinstance(record["text"], str) and SPECIAL not in record["text"]
    assert line.count(b'"text"') == 1  # a field given twice is left to Python (json keeps the last)
    assert Counter(tally.counts()) == PRETOK.count(record["text"])


def _count(path, settings: CountSettings, monkeypatch, fast: bool) -> tuple[Counter[bytes], int] | str:
    with monkeypatch.context() as m:
        if not fast:
            m.setattr(shards_module.PretokenTally, "jsonl_field", lambda self, field: None)
        try:
            result = count_shard(Shard(str(path), JSONL, None, 0, 0, None), settings)
        except CorpusError as e:
            return str(e)
    return +result.counts, result.bad_records


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    shard=st.lists(lines | st.sampled_from([b"", b" ", b"\t\r"]), max_size=12),
    skip=st.booleans(),
    errors=st.sampled_from(["strict", "replace"]),
)
def test_a_shard_counts_the_same_and_fails_the_same_either_way(tmp_path, monkeypatch, shard, skip, errors):
    path = tmp_path / "docs.jsonl"
    path.write_bytes(b"\n".join(shard))
    settings_ = CountSettings("gpt2", (SPECIAL,), skip_bad_records=skip, errors=errors)
    assert _count(path, settings_, monkeypatch, True) == _count(path, settings_, monkeypatch, False)


def test_the_c_reader_stops_at_the_first_line_it_leaves_and_goes_on_after_it():
    data = b'{"text": "a b"}\n\n{"text": 1}\n{"id": 2, "text": "c"}\n'
    tally = PRETOK.new_tally()
    assert tally.add_jsonl(data, 0, b"text", ()) == (data.index(b'{"text": 1}'), 2)
    after = data.index(b'{"id"')
    assert tally.add_jsonl(data, after, b"text", ()) == (len(data), 1)
    assert tally.counts() == {b"a": 1, b" b": 1, b"c": 1}


@pytest.mark.parametrize(("pattern", "specials"), [("gpt2", ()), ("gpt2", (SPECIAL,))])
def test_the_c_reader_is_used_only_where_python_would_count_the_same(pattern, specials):
    tally = shards_module.PretokenTally(PreTokenizer(pattern, specials))
    assert tally.jsonl_field("text") is not None
    assert shards_module.PretokenTally(PreTokenizer(r"\w+|\W", specials)).jsonl_field("text") is None  # through regex
    assert shards_module.PretokenTally(PreTokenizer(pattern, specials, normalizer="NFC")).jsonl_field("text") is None


def test_a_lone_surrogate_is_a_bad_record_or_replaced(tmp_path):
    path = tmp_path / "docs.jsonl"
    path.write_bytes(b'{"text": "ok"}\n{"text": "a\\udc00b"}\n')
    shard = Shard(str(path), JSONL, None, 0, 0, None)
    with pytest.raises(CorpusError, match=r"line 2: \"text\" holds a lone surrogate \(\\udc00\)"):
        count_shard(shard, CountSettings("gpt2"))
    assert count_shard(shard, CountSettings("gpt2", skip_bad_records=True)).bad_records == 1
    assert +count_shard(shard, CountSettings("gpt2", errors="replace")).counts == PreTokenizer("gpt2").count("ok") + PreTokenizer(
        "gpt2"
    ).count("a\ufffdb")
