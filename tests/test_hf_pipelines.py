"""Every byte-level BPE ``tokenizer.json``: the pre-tokenizers of Llama-3, Qwen2 and
DeepSeek-V3 exactly as their files ship them (built here on cl100k's ranks), every ``Split``
behaviour, ``ByteLevel``'s own regex and prefix space, the NFC normalizer and added tokens
special or not, checked against Hugging Face ``tokenizers`` reading the same file."""

from __future__ import annotations

import gzip
import json
import unicodedata
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine import ModelFileError, PrefixSpace, Split, Tokenizer
from engine.corpus.pretokenize import PATTERNS
from engine.formats.byte_unicode import bytes_to_token_string
from engine.formats.hf_regex import from_onig, to_onig
from tests.exactness import ASSIGNED, CONFORMANCE, CORPORA, rank_file, slices, text_of

tokenizers = pytest.importorskip("tokenizers")

BYTE_LEVEL = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}
LLAMA3 = r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
QWEN2 = r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
DEEPSEEK_V3 = [
    r"""\p{N}{1,3}""",
    r"""[一-龥぀-ゟ゠-ヿ]+""",
    r"""[!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+"""
    r"""| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+""",
]


def split(pattern: str, behavior: str = "Isolated", invert: bool = False, kind: str = "Regex") -> dict[str, Any]:
    return {"type": "Split", "pattern": {kind: pattern}, "behavior": behavior, "invert": invert}


def sequence(*steps: dict[str, Any]) -> dict[str, Any]:
    return {"type": "Sequence", "pretokenizers": list(steps)}


def added(content: str, i: int, special: bool = True, normalized: bool = False, **options: bool) -> dict[str, Any]:
    flags = {"single_word": False, "lstrip": False, "rstrip": False} | options
    return {"id": i, "content": content, **flags, "normalized": normalized, "special": special}


def hf_file(
    tok: Tokenizer,
    pre_tokenizer: dict[str, Any],
    normalizer: dict[str, Any] | None = None,
    added_tokens: list[dict[str, Any]] | None = None,
    ignore_merges: bool = False,
    merges_as_pairs: bool = False,
) -> str:
    """A ``tokenizer.json`` as HF's own files are laid out: the model's vocabulary and merges
    (the ordinary tokens of ``tok``), the added tokens after them, only in ``added_tokens``."""
    specials = set(tok.special_ids.values())
    vocab = {bytes_to_token_string(t): i for i, t in sorted(tok.vocab.items()) if i not in specials}
    pairs = [[bytes_to_token_string(a), bytes_to_token_string(b)] for a, b in tok.merges]
    doc = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added_tokens or [],
        "normalizer": normalizer,
        "pre_tokenizer": pre_tokenizer,
        "post_processor": None,
        "decoder": {**BYTE_LEVEL, "use_regex": True},
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": None,
            "continuing_subword_prefix": None,
            "end_of_word_suffix": None,
            "fuse_unk": False,
            "byte_fallback": False,
            "ignore_merges": ignore_merges,
            "vocab": vocab,
            "merges": pairs if merges_as_pairs else [" ".join(p) for p in pairs],
        },
    }
    return json.dumps(doc, ensure_ascii=False)


def both(tmp_path, text: str) -> tuple[Tokenizer, Any]:  # noqa: ANN001
    """The file read by the engine and by Hugging Face ``tokenizers``."""
    path = tmp_path / "tokenizer.json"
    path.write_text(text, encoding="utf-8")
    return Tokenizer.load(path), tokenizers.Tokenizer.from_file(str(path))


def hf_ids(hf: Any, texts: list[str]) -> list[list[int]]:
    return [e.ids for e in hf.encode_batch(texts, add_special_tokens=False)]


# -- the open models' pre-tokenizers, on cl100k's ranks ---------------------------------------------


@pytest.fixture(scope="module")
def cl100k() -> Tokenizer:
    return Tokenizer.load(rank_file("cl100k_base"))


FIRST = 100256  # cl100k's ranks run 0-100255: added tokens follow, as in the open models' files

MODELS: dict[str, dict[str, Any]] = {
    "llama3": {
        "pre_tokenizer": sequence(split(LLAMA3), BYTE_LEVEL),
        "added_tokens": [added(t, FIRST + k) for k, t in enumerate(["<|begin_of_text|>", "<|end_of_text|>", "<|eot_id|>"])],
        "ignore_merges": True,
    },
    "qwen2": {
        "pre_tokenizer": sequence(split(QWEN2), BYTE_LEVEL),
        "normalizer": {"type": "NFC"},
        "added_tokens": [
            added("<|endoftext|>", FIRST),
            added("<|im_start|>", FIRST + 1),
            added("<|im_end|>", FIRST + 2),
            added("<tool_call>", FIRST + 3, special=False),
            added("</tool_call>", FIRST + 4, special=False),
            added("résumé", FIRST + 5, special=False, normalized=True),  # matched on the NFC text
        ],
        "merges_as_pairs": True,
    },
    "deepseek_v3": {
        "pre_tokenizer": sequence(*map(split, DEEPSEEK_V3), BYTE_LEVEL),
        "added_tokens": [added(t, FIRST + k) for k, t in enumerate(["<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>", "<｜▁pad▁｜>"])],
        "merges_as_pairs": True,
    },
}


@pytest.fixture(scope="module", params=list(MODELS))
def model(request: pytest.FixtureRequest, cl100k: Tokenizer, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Tokenizer, Any]:
    name = str(request.param)
    return (name, *both(tmp_path_factory.mktemp(name), hf_file(cl100k, **MODELS[name])))


def specials_of(name: str) -> tuple[str, ...]:
    return tuple(a["content"] for a in MODELS[name]["added_tokens"])


def test_the_files_load_as_their_pre_tokenizers_say(model):
    name, tok, _ = model
    assert {a["content"]: a["id"] for a in MODELS[name]["added_tokens"]} == tok.special_ids
    if name == "llama3":
        assert PATTERNS[tok.pattern] == LLAMA3 and tok.normalizer is None and tok.direct
        assert tok.pretokenizer.family == "gpt4" and tok.pretokenizer.chunked  # encoded in C
    elif name == "qwen2":
        assert PATTERNS[tok.pattern] == QWEN2 and tok.normalizer == "NFC"
        assert tok.pretokenizer.family == "qwen2" and tok._new_piece_encoder() is not None  # NFC in Python, the rest in C
        assert [t.special for t in tok.added_tokens] == [True, True, True, False, False, False]
    else:
        assert tok.pattern == tuple(Split(p) for p in DEEPSEEK_V3)


@pytest.mark.parametrize("text_name", CONFORMANCE)
def test_conformance_texts_equal_hf(model, text_name):
    _, tok, hf = model
    text = text_of(text_name)
    assert tok.encode(text) == hf_ids(hf, [text])[0]


@pytest.mark.parametrize("corpus", CORPORA)
def test_random_slices_equal_hf(model, corpus):
    """1,500 slices of English or Chinese, a quarter with an added token put in."""
    name, tok, hf = model
    texts = slices(corpus, 1500, seed=len(name) + len(corpus), specials=specials_of(name))
    assert [tok.encode(t) for t in texts] == hf_ids(hf, texts)


def test_decomposed_text_is_normalized_as_qwen2_does(model):
    name, tok, hf = model
    texts = ["re\u0301sume\u0301 e\u0301te\u0301", "Å Å Å", "한국어 \u1112\u1161\u11ab", "<tool_call>caf\u0065\u0301</tool_call>"]
    assert [tok.encode(t) for t in texts] == hf_ids(hf, texts)
    if name == "qwen2":
        assert tok.encode(texts[0])[0] == FIRST + 5  # résumé, composed, is the added token
        assert tok.encode(texts[1]) == tok.encode(unicodedata.normalize("NFC", texts[1]))


def test_streamed_and_stepped_equal_encode(model):
    name, tok, _ = model
    text = text_of("zh-xiyouji-128k.txt")[:4000] + specials_of(name)[0] + text_of("en-mix-192k.txt")[:4000]
    ids = tok.encode(text)
    assert list(tok.encode_iterable(text[i : i + 500] for i in range(0, len(text), 500))) == ids
    assert [i for trace in tok.encode_steps(text) for i in trace.ids] == ids


open_model_text = st.lists(
    st.one_of(
        st.text(ASSIGNED, max_size=8),
        st.text(st.sampled_from(" \t\n\r\u3000"), min_size=1, max_size=4),
        st.sampled_from(["'s", "'LL", "12345", "你好世界", "カタカナ", "ひらがな", "e\u0301", "A\u030a", "#hash", "<tool_call>", "résumé"]),
        st.sampled_from(["<|begin_of_text|>", "<|im_start|>", "<｜end▁of▁sentence｜>", "<|endoftext|>"]),
    ),
    max_size=20,
).map("".join)


@settings(max_examples=150, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=open_model_text)
def test_generated_text_equals_hf(model, text):
    _, tok, hf = model
    assert tok.encode(text) == hf_ids(hf, [text])[0]


def test_saved_file_loads_in_hf_and_here_with_the_same_ids(model, tmp_path):
    name, tok, _ = model
    path = tok.save(tmp_path / "again.json")
    hf = tokenizers.Tokenizer.from_file(str(path))
    again = Tokenizer.load(path)
    assert again.pattern == tok.pattern and again.normalizer == tok.normalizer and again.added_tokens == tok.added_tokens
    texts = [*slices("en-mix-192k.txt", 200, 7, specials_of(name)), *slices("zh-xiyouji-128k.txt", 200, 8)]
    expected = [tok.encode(t) for t in texts]
    assert hf_ids(hf, texts) == expected
    assert [again.encode(t) for t in texts] == expected


# -- every option, on a small vocabulary -----------------------------------------------------------


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Tokenizer:
    """cl100k's first 2,000 ranks: a small byte-level BPE, quick for HF to load."""
    path = tmp_path_factory.mktemp("small") / "small.tiktoken"
    lines = gzip.decompress(rank_file("cl100k_base").read_bytes()).splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:2000]))
    return Tokenizer.load(path, pattern="gpt2")


OPTIONS: dict[str, tuple[dict[str, Any], dict[str, Any] | None, list[dict[str, Any]]]] = {
    "ByteLevel with its regex": ({**BYTE_LEVEL, "use_regex": True}, None, []),
    "ByteLevel with regex and prefix space": ({**BYTE_LEVEL, "use_regex": True, "add_prefix_space": True}, None, []),
    "ByteLevel, prefix space, no regex": ({**BYTE_LEVEL, "add_prefix_space": True}, None, []),
    "ByteLevel alone": (BYTE_LEVEL, None, []),
    **{
        f"Split {behavior}{' inverted' if invert else ''}": (sequence(split(r"\s+|[,.]", behavior, invert), BYTE_LEVEL), None, [])
        for behavior in ["Isolated", "Removed", "MergedWithPrevious", "MergedWithNext", "Contiguous"]
        for invert in (False, True)
    },
    **{
        f"Split string {behavior}": (sequence(split(", ", behavior, kind="String"), BYTE_LEVEL), None, [])
        for behavior in ["Isolated", "Removed", "MergedWithPrevious", "MergedWithNext", "Contiguous"]
    },
    **{
        f"Split with empty matches {behavior}": (sequence(split(r"a*|b", behavior), BYTE_LEVEL), None, [])
        for behavior in ["Isolated", "MergedWithPrevious", "MergedWithNext", "Contiguous"]
    },
    "Splits in sequence, nested": (
        sequence(sequence(split(r"\p{N}"), split(r"\s", "MergedWithNext")), {**BYTE_LEVEL, "add_prefix_space": True}),
        None,
        [],
    ),
    "Oniguruma's {m,n}+ and anchors": (sequence(split(r"\p{N}{1,2}+|^\s+|\s+$|\p{L}+"), BYTE_LEVEL), None, []),
    "added tokens every way": (
        sequence(split(LLAMA3), BYTE_LEVEL),
        {"type": "Sequence", "normalizers": [{"type": "NFC"}]},
        [
            added("<s>", 2000),
            added("<mask>", 2001, lstrip=True),
            added("<sep>", 2002, rstrip=True),
            added("word", 2003, special=False, single_word=True),
            added("café", 2004, special=False, normalized=True),
            added("<s><s>", 2005),
            added("ĠĠé", 2006, special=False, normalized=False),
        ],
    ),
}

option_text = st.lists(
    st.one_of(
        st.text(st.sampled_from("ab c,.12\n\t é\u0301xyz"), max_size=8),
        st.sampled_from([" ", "  ", ", ", "word", "a word,", "cafe\u0301", "café", "<s>", "<mask>", "<sep>", " \u00a0", "123", "ĠĠé"]),
    ),
    max_size=12,
).map("".join)


@pytest.mark.parametrize("option", list(OPTIONS))
def test_each_option_equals_hf(small, tmp_path, option):
    pre_tokenizer, normalizer, added_tokens = OPTIONS[option]
    tok, hf = both(tmp_path, hf_file(small, pre_tokenizer, normalizer, added_tokens))

    @settings(max_examples=120)
    @given(text=option_text)
    def same(text: str) -> None:
        assert tok.encode(text) == hf_ids(hf, [text])[0], repr(text)

    same()
    texts = slices("en-mix-192k.txt", 100, 9, tuple(a["content"] for a in added_tokens))
    assert [tok.encode(t) for t in texts] == hf_ids(hf, texts)
    saved = tok.save(tmp_path / "saved.json")  # written back, read by HF the same
    assert hf_ids(tokenizers.Tokenizer.from_file(str(saved)), texts) == [tok.encode(t) for t in texts]


def test_stages_in_their_simplest_form(small):
    """One isolated Split is the common case, a regex; anything more stays stages."""
    assert Tokenizer(small.vocab, small.merges, pattern=[Split(LLAMA3)]).pattern == LLAMA3
    stages = (Split(r"\d"), Split(r"\s", "merged_with_next", True), PrefixSpace())
    assert Tokenizer(small.vocab, small.merges, pattern=stages).pattern == stages
    with pytest.raises(ValueError, match="Split behavior 'sideways'"):
        Split("x", "sideways")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("onig", "python"),
    [
        (LLAMA3, LLAMA3),
        (r"\p{N}{1,3}+", r"(?:\p{N}{1,3})+"),
        (r"[a-z]{2}+x", r"(?:[a-z]{2})+x"),
        (r"(ab|c){1,}+", r"(?:(ab|c){1,})+"),
        (r"^\s+|\s+$", r"(?m:^)\s+|\s+(?m:$)"),
        (r"[$^]\$\^", r"[$^]\$\^"),
        (r"(?m)^x$", r"(?m)^x$"),
        (r"a\z|b\Z", r"a\Z|b(?=\n?\Z)"),
    ],
)
def test_regexes_read_as_oniguruma_reads_them(onig, python):
    assert from_onig(onig) == python


@pytest.mark.parametrize(
    ("python", "onig"),
    [
        (LLAMA3, LLAMA3),
        (r"\p{N}{1,3}+|\s", r"(?>\p{N}{1,3})|\s"),
        (r"x(?:ab){2,}+", r"x(?>(?:ab){2,})"),
        (r"^a$|\s++$", r"\Aa(?=\n?\z)|\s++(?=\n?\z)"),
        (r"a\Z[\]{]{2}", r"a\z[\]{]{2}"),
    ],
)
def test_regexes_written_as_oniguruma_reads_them(python, onig):
    assert to_onig(python) == onig


def test_what_hf_would_read_otherwise_is_refused(small, tmp_path):
    """An added token that is also the model's token for other bytes (``é`` is byte 0xe9
    there): HF gives it that token's id, not its own."""
    path = tmp_path / "tokenizer.json"
    path.write_text(hf_file(small, BYTE_LEVEL, None, [added("é", 2000)]), encoding="utf-8")
    with pytest.raises(ModelFileError, match="added token 'é' \\(id 2000\\) is also the model's byte-level token 'é'"):
        Tokenizer.load(path)
    for pre_tokenizer, message in [
        ({"type": "Metaspace"}, "does not end in ByteLevel"),
        (sequence(split("x"), {"type": "Whitespace"}), "does not end in ByteLevel"),
        (sequence(split("x", kind="Char"), BYTE_LEVEL), "pattern is not {'Regex': ...} or {'String': ...}"),
    ]:
        path.write_text(hf_file(small, pre_tokenizer), encoding="utf-8")
        with pytest.raises(ModelFileError, match=message):
            Tokenizer.load(path)
