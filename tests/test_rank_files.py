"""tiktoken's rank files: GPT-4's cl100k_base and GPT-4o's o200k_base load by name, encode
exactly as tiktoken does (special tokens at their ids), export to files that tiktoken and
Hugging Face ``tokenizers`` read back identically; bad rank files are refused by line."""

from __future__ import annotations

import base64
import gzip
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine import ModelFileError, SettingsError, Tokenizer
from engine.formats._ranks_core import recover_merges
from tests.conftest import refused, run_cli
from tests.exactness import ASSIGNED, CONFORMANCE, CORPORA, ENCODINGS, rank_file, ranks_of, slices, text_of, tiktoken_encoding

NAMES = list(ENCODINGS)


@pytest.fixture(scope="module", params=NAMES)
def name(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="module")
def tok(name: str) -> Tokenizer:
    return Tokenizer.load(rank_file(name))


def test_published_rank_files_come_with_their_pattern_and_special_ids(name, tok):
    pattern, specials = ENCODINGS[name]
    ranks = ranks_of(name)
    assert tok.pretokenizer.pattern == pattern
    assert tok.special_ids == specials
    assert {i: t for i, t in tok.vocab.items() if i not in specials.values()} == {i: t for t, i in ranks.items()}
    assert len(tok.merges) == len(ranks) - 256  # one merge per token longer than a byte
    assert tok.direct


def test_gaps_in_the_ids_stay_gaps():
    """cl100k has no token 100256 nor 100261-100275: nothing is renumbered into them."""
    tok = Tokenizer.load(rank_file("cl100k_base"))
    assert 100256 not in tok.vocab and not any(i in tok.vocab for i in range(100261, 100276))
    assert tok.encode("<|endoftext|>x<|endofprompt|>") == [100257, 87, 100276]
    assert tok.decode([100257, 100276]) == "<|endoftext|><|endofprompt|>"


def test_each_merge_is_the_last_step_of_bpe_over_the_tokens_own_bytes(name, tok):
    """The compiled recovery against the definition, run in Python on 3,000 tokens."""
    ranks = ranks_of(name)
    by_rank = sorted(ranks, key=ranks.__getitem__)
    merge_of = {left + right: (left, right) for left, right in tok.merges}
    sample = by_rank[256:][::33]
    for token in sample:
        limit = ranks[token]
        parts = [token[i : i + 1] for i in range(len(token))]
        while len(parts) > 2:
            found = [(ranks.get(a + b, limit), i) for i, (a, b) in enumerate(zip(parts, parts[1:], strict=False))]
            best, i = min(found)
            assert best < limit, token
            parts[i : i + 2] = [parts[i] + parts[i + 1]]
        assert merge_of[token] == tuple(parts)
    assert len(sample) > 3000


@pytest.mark.parametrize("text_name", CONFORMANCE)
def test_conformance_texts_equal_tiktoken(name, tok, text_name):
    text = text_of(text_name)
    ids = tok.encode(text)
    assert ids == tiktoken_encoding(name).encode(text, allowed_special="all")
    assert tok.decode(ids) == text


@pytest.mark.parametrize("corpus", CORPORA)
def test_random_slices_equal_tiktoken(name, tok, corpus):
    """1,500 slices of English or Chinese, a quarter with a special token put in."""
    reference = tiktoken_encoding(name)
    texts = slices(corpus, 1500, seed=len(name), specials=tuple(ENCODINGS[name][1]))
    assert [tok.encode(t) for t in texts] == reference.encode_batch(texts, allowed_special="all")


def test_whole_slices_equal_tiktoken_streamed_and_stepped(name, tok):
    text = text_of("zh-xiyouji-128k.txt")[:20000] + "<|endoftext|>" + text_of("en-mix-192k.txt")[:20000]
    ids = tok.encode(text)
    assert ids == tiktoken_encoding(name).encode(text, allowed_special="all")
    assert list(tok.encode_iterable(text[i : i + 997] for i in range(0, len(text), 997))) == ids
    assert [i for trace in tok.encode_steps(text[:3000]) for i in trace.ids] == tok.encode(text[:3000])


unicode_text = st.lists(
    st.one_of(
        st.text(ASSIGNED, max_size=10),
        st.text(st.sampled_from(" \t\n\r\u00a0\u3000"), min_size=1, max_size=5),
        st.sampled_from(["🙂", "👩‍👩‍👧", "e\u0301\u0302", "ก\u0e34", "'s", "'LL", "’re", "٣٤٥", "1234567", "HTTPServer", "x/\n"]),
        st.sampled_from(["<|endoftext|>", "<|endofprompt|>", "<|endoftext", "<|fim_prefix|>"]),
    ),
    max_size=25,
).map("".join)


@pytest.fixture(scope="module")
def both() -> dict[str, Tokenizer]:
    return {name: Tokenizer.load(rank_file(name)) for name in NAMES}


@settings(max_examples=300)
@given(text=unicode_text)
def test_generated_text_equals_tiktoken(both, text):
    for name, tok in both.items():
        assert tok.encode(text) == tiktoken_encoding(name).encode(text, allowed_special="all")


# -- export ---------------------------------------------------------------------------------


def test_tiktoken_export_is_byte_identical(name, tok, tmp_path):
    path = tok.export_tiktoken(tmp_path / f"{name}.tiktoken")
    assert path.read_bytes() == gzip.decompress(rank_file(name).read_bytes())
    again = Tokenizer.load(path)  # known by its content, as the original
    assert again.special_ids == tok.special_ids and again.merges == tok.merges


def test_tokenizer_json_export_loads_in_hf_with_the_same_ids(name, tok, tmp_path):
    tokenizers = pytest.importorskip("tokenizers")
    path = tok.save(tmp_path / "tokenizer.json")
    doc = json.loads(path.read_text(encoding="utf-8"))
    assert {a["content"]: a["id"] for a in doc["added_tokens"]} == ENCODINGS[name][1]
    assert all(a["special"] for a in doc["added_tokens"])
    hf = tokenizers.Tokenizer.from_file(str(path))
    texts = [*(text_of(t) for t in CONFORMANCE), *slices("en-mix-192k.txt", 300, 1, tuple(ENCODINGS[name][1]))]
    texts += slices("zh-xiyouji-128k.txt", 300, 2)
    assert [e.ids for e in hf.encode_batch(texts, add_special_tokens=False)] == [tok.encode(t) for t in texts]
    again = Tokenizer.load(path)
    assert again.special_ids == tok.special_ids and again.vocab == tok.vocab
    assert [again.encode(t) for t in texts[:50]] == [tok.encode(t) for t in texts[:50]]


# -- other rank files ------------------------------------------------------------------------


def _write_ranks(path, ranks: dict[bytes, int]) -> None:
    path.write_bytes(b"".join(base64.b64encode(t) + b" %d\n" % r for t, r in sorted(ranks.items(), key=lambda kv: kv[1])))


@pytest.fixture(scope="module")
def small_ranks() -> dict[bytes, int]:
    """cl100k's first 3,000 ranks: a smaller byte-level BPE of its own."""
    return {t: r for t, r in ranks_of("cl100k_base").items() if r < 3000}


def test_another_rank_file_needs_a_pattern(tmp_path, small_ranks):
    path = tmp_path / "small.tiktoken"
    _write_ranks(path, small_ranks)
    with pytest.raises(SettingsError, match="not a published rank file .* give its pre-tokenizer pattern"):
        Tokenizer.load(path)
    pattern = ENCODINGS["cl100k_base"][0]
    tok = Tokenizer.load(path, pattern=pattern)
    assert tok.special_ids == {}
    with_specials = Tokenizer.from_tiktoken(path, pattern, {"<|end|>": 5000})
    tiktoken = pytest.importorskip("tiktoken")
    reference = tiktoken.Encoding("small", pat_str=pattern, mergeable_ranks=small_ranks, special_tokens={"<|end|>": 5000})
    for text in [text_of("address.txt"), *slices("en-mix-192k.txt", 200, 3, ("<|end|>",))]:
        assert with_specials.encode(text) == reference.encode(text, allowed_special="all")
    assert tok.export_tiktoken(tmp_path / "again.tiktoken").read_bytes() == path.read_bytes()


def test_named_pattern_and_ranks_out_of_order(tmp_path, small_ranks):
    """Lines in any order, ranks with gaps, no newline after the last line: read by rank,
    ids are the ranks."""
    shifted = {t: (r if r < 256 else r * 2) for t, r in small_ranks.items()}
    path = tmp_path / "shuffled.tiktoken"
    lines = [base64.b64encode(t) + b" %d\n" % r for t, r in shifted.items()]
    path.write_bytes(b"".join(reversed(lines))[:-1])
    tok = Tokenizer.load(path, pattern="gpt4")
    tiktoken = pytest.importorskip("tiktoken")
    reference = tiktoken.Encoding("shifted", pat_str=tok.pretokenizer.pattern, mergeable_ranks=shifted, special_tokens={})
    for text in slices("en-mix-192k.txt", 200, 4):
        assert tok.encode(text) == reference.encode(text)


BAD_FILES = [
    (lambda lines: lines[:5] + [b"no+base64@ 5"] + lines[6:], "line 6: 'no+base64@ 5' does not start with the base64 of a token"),
    (lambda lines: lines[:7] + [lines[7] + b" extra"] + lines[8:], "line 8 is not 'base64 rank'"),
    (lambda lines: lines[:7] + [lines[7].split()[0] + b" -8"] + lines[8:], "line 8 is not 'base64 rank'"),
    (lambda lines: [*lines, lines[300].split()[0] + b" 3000"], "line 3001: token b'as' is listed twice (first on line 301)"),
    (lambda lines: [*lines, base64.b64encode(b"zzqx") + b" 299"], "line 3001: rank 299 is given twice (first on line 300)"),
    (lambda lines: [line for line in lines if line.split()[1] != b"65"], "no token is the single byte 0x62"),
    (lambda lines: [*lines, base64.b64encode(b" the cat sat") + b" 3000"], "line 3001: token b' the cat sat' (rank 3000) is not made"),
    (lambda lines: [], "empty: not a rank file"),
]


@pytest.mark.parametrize(("edit", "message"), BAD_FILES)
def test_bad_rank_files_are_refused_by_line(tmp_path, small_ranks, edit, message):
    path = tmp_path / "bad.tiktoken"
    _write_ranks(path, small_ranks)
    path.write_bytes(b"".join(line + b"\n" for line in edit(path.read_bytes().splitlines())))
    with pytest.raises(ModelFileError) as err:
        Tokenizer.load(path, pattern="gpt4")
    assert str(err.value).startswith(f"{path}: ") and message in str(err.value)


def test_cli_refuses_in_one_line(tmp_path, small_ranks):
    path = tmp_path / "bad.tiktoken.gz"
    _write_ranks(tmp_path / "plain", small_ranks)
    lines = (tmp_path / "plain").read_bytes().splitlines()
    path.write_bytes(gzip.compress(b"\n".join(lines[:9] + [b"@@@ 9"] + lines[10:]) + b"\n"))
    refused(run_cli("encode", "--model", str(path), "--pattern", "gpt4", "--text", "hi", "--headless"), str(path), "line 10")
    (tmp_path / "cut.tiktoken.gz").write_bytes(path.read_bytes()[:300])
    refused(run_cli("decode", "--model", str(tmp_path / "cut.tiktoken.gz"), "--pattern", "gpt4", "1"), "not a readable gzip file")
    refused(run_cli("encode", "--model", str(tmp_path / "plain"), "--text", "hi", "--headless"), "invalid JSON")


def test_recovery_reports_the_first_token_not_made():
    assert recover_merges([bytes([b]) for b in range(256)] + [b"ab", b"abc", b"xyz", b"xy"]) == (
        [-1] * 256 + [97, 256],
        [-1] * 256 + [98, 99],
        258,
    )
    with pytest.raises(TypeError):
        recover_merges([b"a", "b"])  # type: ignore[list-item]


@settings(max_examples=150)
@given(data=st.data())
def test_damaged_rank_files_load_or_are_refused_in_one_line(tmp_path_factory, data):
    """Bytes changed, cut out or put in anywhere: the file loads (a damage that leaves a
    byte-level BPE), or one line names it; never another error."""
    lines = gzip.decompress(rank_file("cl100k_base").read_bytes()).splitlines(keepends=True)[:600]
    raw = bytearray(b"".join(lines))
    for _ in range(data.draw(st.integers(1, 3))):
        at = data.draw(st.integers(0, len(raw) - 1))
        kind = data.draw(st.sampled_from(["change", "cut", "insert"]))
        if kind == "change":
            raw[at] = data.draw(st.integers(0, 255))
        elif kind == "cut":
            del raw[at : at + data.draw(st.integers(1, 40))]
        else:
            raw[at:at] = data.draw(st.binary(min_size=1, max_size=8))
    path = tmp_path_factory.mktemp("damaged") / "d.tiktoken"
    path.write_bytes(bytes(raw))
    try:
        Tokenizer.load(path, pattern="gpt4")
    except (ModelFileError, SettingsError) as e:
        assert str(e).startswith(f"{path}: ") and "\n" not in str(e)
