"""JSONL records read in C (``engine/corpus/_jsonl.h``): counted (``Tally.add_jsonl``) and
encoded (``Encoder.encode_jsonl``). Whatever line the C reader takes, it reads as
``json.loads`` does; what it leaves, Python reads; a shard counts the same and a dataset
encodes the same, with the same errors, either way."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from engine import CorpusError, PreTokenizer, Tokenizer
from engine.corpus import shards as shards_module
from engine.corpus._tally import count_lines
from engine.corpus.shards import CountSettings, Shard, count_shard
from engine.corpus.sources import JSONL, expand_inputs
from engine.encode import dataset as dataset_module
from engine.encode.dataset import encode_dataset
from tests.conftest import fixture_file

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


@settings(max_examples=600)
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


@pytest.mark.parametrize("after", [b"", b', "source": "its closing quote is met sixteen bytes at a time"'])
@pytest.mark.parametrize("at", range(0, 40, 3))
@pytest.mark.parametrize("odd", [b"\xff", b"\xe4\xb8", b"\xed\xa0\x80", b"\x1f", b"\x00", b"\x7f", b"\\n", b'\\"', "é".encode(), b""])
def test_long_runs_are_read_as_json_loads_reads_them_or_left(at, odd, after):
    """Runs of a string's own bytes are scanned sixteen at a time: an odd byte anywhere in a
    long run is seen, the wide characters in its first blocks too when its last are ASCII."""
    run = "你好, world 😀 ".encode() * 2 + b" and then ASCII alone to the end of the run"
    at = len(run.decode()[:at].encode())  # at a character's start: the odd bytes alone make the run bad
    line = b'{"text": "' + run[:at] + odd + run[at:] + b'"' + after + b"}"
    check_line(line)
    taken = PRETOK.new_tally().add_jsonl(line + b"\n", 0, b"text", (SPECIAL.encode(),))[0] > 0
    assert taken == (odd not in (b"\xff", b"\xe4\xb8", b"\xed\xa0\x80", b"\x1f", b"\x00"))


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


@settings(max_examples=200, suppress_health_check=[HealthCheck.function_scoped_fixture])
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


# -- encoding a dataset ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def gpt2() -> Tokenizer:
    return Tokenizer.from_files(fixture_file("gpt2_vocab.json"), fixture_file("gpt2_merges.txt"))


@settings(max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(line=lines)
@example(line=b'{"text": "a<|endoftext|>b"}')
@example(line=b'{"text": ""}')
def test_a_line_the_encoder_takes_is_encoded_as_its_json_text(gpt2, line):
    eot = gpt2.special_ids[SPECIAL]
    encoder = gpt2._new_encoder()
    ids, stop, lines_read, documents = encoder.encode_jsonl(line + b"\n", 0, b"text", 2, eot)
    if stop == 0:  # left to Python
        assert (ids, lines_read, documents) == (b"", 0, 0)
        return
    assert (stop, lines_read) == (len(line) + 1, 1)
    if not line.strip():
        assert (ids, documents) == (b"", 0)
        return
    record = json.loads(line.decode("utf-8"))
    assert documents == 1 and line.count(b'"text"') == 1
    assert ids == gpt2.encode_packed(record["text"], "uint16") + eot.to_bytes(2, "little")


def _dataset(gpt2: Tokenizer, path, out, monkeypatch, fast: bool, workers: int, **options: object) -> tuple[bytes, int, int] | str:
    """The ids, documents and bad records of the JSONL file encoded, or the error; ``fast``:
    its lines read in C where they can be, else every line by Python's json as a text."""
    with monkeypatch.context() as m:
        if not fast:
            m.setattr(dataset_module, "JSONL", "a format no file has")
        try:
            summary = encode_dataset(gpt2, expand_inputs([str(path)]), out, workers=workers, **options)  # type: ignore[arg-type]
        except CorpusError as e:
            return str(e)
    return out.read_bytes(), summary.documents, summary.bad_records


@settings(max_examples=100, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    shard=st.lists(lines | st.sampled_from([b"", b" ", b"\t\r", b'{"text": "plain words"}']), max_size=12),
    skip=st.booleans(),
    errors=st.sampled_from(["strict", "replace"]),
    workers=st.integers(1, 2),
    block=st.sampled_from([16, 1 << 20]),
)
def test_a_dataset_encodes_the_same_and_fails_the_same_either_way(gpt2, tmp_path, monkeypatch, shard, skip, errors, workers, block):
    """Read in C or by Python's json, every line: the same ids, documents, records skipped
    and errors (the line they name), in one thread or two, in blocks of any size."""
    path = tmp_path / "docs.jsonl"
    path.write_bytes(b"\n".join(shard))
    monkeypatch.setattr(shards_module, "LINE_BLOCK", block)
    options = {"skip_bad_records": skip, "errors": errors, "eot": gpt2.special_ids[SPECIAL]}
    fast = _dataset(gpt2, path, tmp_path / "fast.bin", monkeypatch, True, workers, **options)
    slow = _dataset(gpt2, path, tmp_path / "slow.bin", monkeypatch, False, 1, **options)
    assert fast == slow


def test_the_first_bad_line_is_named_whichever_thread_reads_it(gpt2, tmp_path, monkeypatch):
    """Two threads, each a block (the last line, with no newline after it, is a block of its
    own): the error named is the first bad line's, as in one thread, though the thread that
    met the later one finished first."""
    path = tmp_path / "docs.jsonl"
    path.write_bytes(b'{"text": "fine"}\n{"text": 1}\n{"other": "x"}')
    for workers in (1, 2):
        error = _dataset(gpt2, path, tmp_path / "ids.bin", monkeypatch, True, workers)
        assert isinstance(error, str) and ": line 2: " in error


def test_a_dataset_under_a_pattern_not_compiled_reads_each_line_in_python(gpt2, tmp_path):
    """Where encoding goes through ``regex``, every line is read by Python's json and its
    text encoded: the same ids as ``encode_packed`` of each, the bad record skipped."""
    tok = Tokenizer(gpt2.vocab, gpt2.merges, gpt2.special_tokens, r" ?\w+| ?[^\w\s]+|\s+")
    assert tok._new_encoder() is None
    path = tmp_path / "docs.jsonl"
    texts = ["Hello there, world!", "", "naïve café\n\tok"]
    path.write_text("\n".join([json.dumps({"text": texts[0]}), "not json", "", *(json.dumps({"text": t}) for t in texts[1:])]) + "\n")
    eot = tok.special_ids[SPECIAL]
    summary = encode_dataset(tok, expand_inputs([str(path)]), tmp_path / "ids.bin", eot=eot, skip_bad_records=True)
    tail = eot.to_bytes(2, "little")
    assert (tmp_path / "ids.bin").read_bytes() == b"".join(tok.encode_packed(t, "uint16") + tail for t in texts)
    assert (summary.documents, summary.bad_records) == (3, 1)


@given(st.binary(max_size=2000), st.integers(0, 2000), st.integers(0, 2000))
@example(b"\n" * 1000, 0, 1000)  # more newlines than one byte of the C loop holds
def test_count_lines_agrees_with_bytes_count(data: bytes, start: int, stop: int) -> None:
    """``count_lines`` (how a stream's reader numbers JSONL lines for messages) counts what
    ``bytes.count`` does, in bytes and in slices of a view."""
    assert count_lines(data) == data.count(b"\n")
    assert count_lines(memoryview(data)[start:stop]) == data[start:stop].count(b"\n")
