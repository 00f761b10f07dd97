"""Every command that takes a model takes the tokenizers people use: ``encode``, ``decode``,
``compare`` and ``encode --out`` on rank files (known by hash, or with ``--pattern``) and on
the open models' ``tokenizer.json`` files, with ids equal to the references'."""

from __future__ import annotations

import gzip
import json

import numpy as np
import pytest

from engine import Tokenizer
from tests.compare_models import gpt2_dir
from tests.conftest import refused, run_cli
from tests.exactness import ENCODINGS, rank_file, text_of, tiktoken_encoding
from tests.test_hf_pipelines import MODELS, hf_file, tokenizers

ENGLISH = "The quick brown fox jumps over the lazy dog. Tokenizers compress English well."
CHINESE = "却说那大圣在水帘洞里，与群猴闲耍。忽一日，正饮酒之间，猴王忽然忧恼。"


@pytest.fixture(scope="module")
def llama3_json(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("llama3") / "tokenizer.json"
    path.write_text(hf_file(Tokenizer.load(rank_file("cl100k_base")), **MODELS["llama3"]), encoding="utf-8")
    return str(path)


@pytest.mark.parametrize("name", list(ENCODINGS))
def test_encode_and_decode_a_rank_file(name):
    text = f"{ENGLISH}<|endoftext|>{CHINESE}"
    done = run_cli("encode", "--model", str(rank_file(name)), "--text", text, "--json")
    assert done.returncode == 0, done.stderr
    ids = [t["id"] for t in json.loads(done.stdout)]
    assert ids == tiktoken_encoding(name).encode(text, allowed_special="all")
    back = run_cli("decode", "--model", str(rank_file(name)), stdin=" ".join(map(str, ids)))
    assert back.returncode == 0 and back.stdout == text


def test_encode_an_open_models_file(llama3_json):
    text = f"<|begin_of_text|>{ENGLISH} {CHINESE}"
    done = run_cli("encode", "--model", llama3_json, "--text", text, "--json")
    assert done.returncode == 0, done.stderr
    expected = tokenizers.Tokenizer.from_file(llama3_json).encode(text, add_special_tokens=False).ids
    assert [t["id"] for t in json.loads(done.stdout)] == expected


def test_another_rank_file_with_its_pattern(tmp_path):
    lines = gzip.decompress(rank_file("cl100k_base").read_bytes()).splitlines(keepends=True)[:5000]
    path = tmp_path / "mine.tiktoken"
    path.write_bytes(b"".join(lines))
    refused(run_cli("encode", "--model", str(path), "--text", "hi", "--headless"), "not a published rank file", "--pattern REGEX")
    done = run_cli("encode", "--model", str(path), "--pattern", ENCODINGS["cl100k_base"][0], "--text", ENGLISH, "--json")
    assert done.returncode == 0, done.stderr
    ids = [t["id"] for t in json.loads(done.stdout)]
    assert max(ids) < 5000 and bytes(b for t in json.loads(done.stdout) for b in t["bytes"]).decode() == ENGLISH
    no_rank_file = run_cli("compare", "--text", "hi", "--headless", "--pattern", "gpt4")
    refused(no_rank_file, "--pattern is the pre-tokenizer of a .tiktoken rank file")


@pytest.mark.parametrize("text", [ENGLISH, CHINESE])
def test_compare_the_models_side_by_side(tmp_path, llama3_json, text):
    models = [str(gpt2_dir(tmp_path)), str(rank_file("cl100k_base")), str(rank_file("o200k_base")), llama3_json]
    done = run_cli("compare", *(a for m in models for a in ("--model", m)), "--text", text, "--json")
    assert done.returncode == 0, done.stderr
    rows = {row["name"]: row for row in json.loads(done.stdout)["rows"]}
    size = len(text.encode("utf-8"))
    for name in ENCODINGS:
        ids = tiktoken_encoding(name).encode(text)
        assert [s["id"] for s in rows[name]["spans"]] == ids
        assert rows[name]["bytes_per_token"] == round(size / len(ids), 4)
        assert rows[name]["vocab_size"] == len(Tokenizer.load(rank_file(name)).vocab)
    if text == CHINESE:  # the larger vocabularies hold more Chinese
        assert rows["gpt2"]["tokens"] > rows["cl100k_base"]["tokens"] > rows["o200k_base"]["tokens"]
    assert [s["id"] for s in rows["tokenizer.json"]["spans"]] == tokenizers.Tokenizer.from_file(llama3_json).encode(text).ids


def test_encode_out_ends_each_document_with_the_models_own_endoftext(tmp_path):
    docs = [ENGLISH, CHINESE, "third<|endoftext|>document"]
    (tmp_path / "docs.jsonl").write_text("".join(json.dumps({"text": d}) + "\n" for d in docs), encoding="utf-8")
    out = tmp_path / "ids.npy"
    done = run_cli("encode", "--model", str(rank_file("cl100k_base")), "--file", str(tmp_path / "docs.jsonl"), "--out", str(out), "--eot")
    assert done.returncode == 0, done.stderr
    reference = tiktoken_encoding("cl100k_base")
    expected = [i for d in docs for i in [*reference.encode(d, allowed_special="all"), 100257]]
    assert np.load(out).tolist() == expected
    assert json.loads((tmp_path / "ids.npy.json").read_text())["eot"] == 100257


def test_encode_out_with_an_open_models_file(tmp_path, llama3_json):
    text = text_of("en-mix-192k.txt")[:50000]
    (tmp_path / "doc.txt").write_text(text, encoding="utf-8")
    out = tmp_path / "ids.bin"
    done = run_cli("encode", "--model", llama3_json, "--file", str(tmp_path / "doc.txt"), "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert np.fromfile(out, dtype="<u4").tolist() == tokenizers.Tokenizer.from_file(llama3_json).encode(text).ids
    refused(run_cli("encode", "--model", llama3_json, "--file", str(tmp_path / "doc.txt"), "--out", str(out), "--eot"), "no <|endoftext|>")
