"""``bpe-tui check``: a student's trainer and encoder held against the exact ones, as a student
runs it (the CLI in a fresh process), and the engine's comparisons it rests on.

The students are small files in tests/fixtures/students (its README says what each is);
they train on tinystories_sample.txt at vocabulary size 300 (43 merges) so each check takes
a fraction of a second.
"""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

import pytest

from bpe_tui.check.jobs import TrainingCheck, run_check
from bpe_tui.check.student import Target
from engine import Tokenizer, Trainer, train_bpe
from engine.check.encoding import HardText, compare_decoding, compare_encoding, hard_texts, with_overlapping
from engine.check.merges import Agreement, MergeDifference, VocabDifference, check_training, first_difference
from engine.check.shapes import ShapeError, encode_result, training_result
from engine.check.why import explain_choice, tie_break
from engine.train.settings import TrainOptions
from tests.conftest import FIXTURES, fixture_file, refused, run_cli

STUDENTS = FIXTURES / "students"
CORPUS = fixture_file("tinystories_sample.txt")
SPECIAL = ["<|endoftext|>"]


def student(name: str) -> str:
    return str(STUDENTS / name)


def check(target: str, *args: str, cwd: Path | None = None) -> tuple[int, str, str]:
    done = run_cli("check", target, *args, "--headless", **({"cwd": cwd} if cwd else {}))
    return done.returncode, done.stdout, done.stderr


def students_merges(file: str) -> tuple[dict[int, bytes], list[tuple[bytes, bytes]]]:
    """What a student's trainer returns, called here (not through the check) to hold the
    check's numbers to."""
    sys.path.insert(0, str(STUDENTS))
    try:
        found = runpy.run_path(student(file))["train_bpe"]
        return found(str(CORPUS), 300, SPECIAL)
    finally:
        sys.path.remove(str(STUDENTS))
        sys.modules.pop("right_trainer", None)  # tie_flipped patched it


# -- the command, as a student runs it -------------------------------------------------------


def test_a_right_trainer_agrees_on_every_merge_and_id() -> None:
    code, out, err = check(f"{student('right_trainer.py')}:train_bpe", str(CORPUS), "--vocab-size", "300")
    lines = out.splitlines()
    assert code == 0, err
    assert lines[0] == "43 of 43 merges match; the vocabulary matches"
    assert lines[1].split()[0] == "time"
    for timed in ("yours ", "the optimized trainer ", "the recount-everything trainer "):
        assert timed in lines[1]


def test_the_lectures_corpus_at_500_gives_cs336s_243_merges(reference_merges) -> None:
    """corpus.en at 500: CS336's fixture merges, all 243 counted."""
    assert len(reference_merges) == 243
    code, out, _ = check(f"{student('right_trainer.py')}:train_bpe", str(fixture_file("corpus.en")), "--vocab-size", "500")
    assert code == 0 and out.splitlines()[0] == "243 of 243 merges match; the vocabulary matches"


def test_a_tie_broken_the_other_way_names_the_first_merge_and_why() -> None:
    _, theirs = students_merges("tie_flipped.py")
    _, rule = train_bpe(CORPUS, 300, SPECIAL)
    k = first_difference(rule, theirs)
    assert k == 7 and theirs[k - 1] == (b" ", b"f") and rule[k - 1] == (b"e", b"d")
    agree = sum(1 for r, y in zip(rule[k:], theirs[k:], strict=True) if r == y)

    code, out, err = check(f"{student('tie_flipped.py')}:train_bpe", str(CORPUS), "--vocab-size", "300")
    assert code == 1, err
    lines = out.splitlines()
    assert lines[0] == "merge 7 differs: yours (b' ', b'f'), the rule's (b'e', b'd')"
    detail = {line.split()[0]: line for line in lines[1:]}
    assert "(b'e', b'd') 42 · (b' ', b'f') 42, in the corpus after merge 6" in detail["counts"]
    assert "a tie at 42 (2 pairs): ties go to the lexicographically greater pair of byte strings (lecture 001" in detail["why"]
    assert "the left tokens decide: b'e' > b' ' (at byte 1, 0x65 'e' > 0x20 ' ')" in detail["why"]
    assert "toward the smaller pair" in detail["likely"]
    assert f"{agree} of the {len(rule) - k} merges after merge 7 still agree" in detail["after"]
    assert "yours " in detail["time"]


def test_the_lectures_corpus_differs_at_merge_32() -> None:
    """The issue's own example: on corpus.en at 500 a smaller-pair tie-break parts at merge 32,
    ␣a|nd against ␣|d, and a prefix is the smaller."""
    code, out, _ = check(f"{student('tie_flipped.py')}:train_bpe", str(fixture_file("corpus.en")), "--vocab-size", "500")
    assert code == 1
    assert out.splitlines()[0] == "merge 32 differs: yours (b' ', b'd'), the rule's (b' a', b'nd')"
    assert "b' ' is a prefix of b' a', so the smaller" in out


def test_special_tokens_counted_as_text_give_another_count() -> None:
    code, out, _ = check(f"{student('specials_merged.py')}:train_bpe", str(CORPUS), "--vocab-size", "300")
    assert code == 1
    lines = out.splitlines()
    assert lines[0] == "merge 5 differs: yours (b'n', b'd'), the rule's (b' ', b'w')"
    assert "(b' ', b'w') 47 · (b'n', b'd') 45, in the corpus after merge 4 (yours is pair 2 in the rule's order)" in out
    assert "the rule's pair occurs more often, 47 times against 45: the most frequent pair merges first" in out
    assert "(b'n', b'd') lies inside the special token '<|endoftext|>'" in out


def test_the_same_merges_under_another_id_layout() -> None:
    code, out, _ = check(f"{student('specials_first.py')}:train_bpe", str(CORPUS), "--vocab-size", "300")
    assert code == 1
    lines = out.splitlines()
    assert lines[0] == "43 of 43 merges match, but the vocabulary differs: id 0 is b'<|endoftext|>' in yours, b'\\x00' in the rule's"
    assert "the same 300 tokens under other ids" in lines[1] and "CS336's tests compare the vocabulary as sets" in lines[1]


def test_an_exception_shows_the_students_frames_only() -> None:
    code, out, err = check(f"{student('raises.py')}:train_bpe", str(CORPUS), "--vocab-size", "300", cwd=FIXTURES.parent.parent)
    assert code == 2 and out == ""
    lines = err.splitlines()
    assert lines[0].startswith("bpe-tui: raises.py:train_bpe raised KeyError in train_bpe(")
    assert lines[1:5] == [
        '  File "tests/fixtures/students/raises.py", line 23, in train_bpe',
        "    pairs = count_pairs(words)",
        '  File "tests/fixtures/students/raises.py", line 12, in count_pairs',
        "    pairs[pair] += count  # KeyError: the pair was never set to 0",
    ]
    assert lines[5].startswith("KeyError: (b'") and len(lines) == 6
    for ours in ("bpe_tui", "runner.py", "engine", "Traceback", "importlib"):
        assert ours not in err


def test_an_exception_in_a_worker_process_shows_its_frames_there(tmp_path: Path) -> None:
    (tmp_path / "pooled.py").write_text(
        "from multiprocessing import Pool\n\n\n"
        "def count(path):\n"
        "    return 1 / 0\n\n\n"
        "def train_bpe(input_path, vocab_size, special_tokens):\n"
        "    with Pool(1) as pool:\n"
        "        return pool.map(count, [input_path])\n",
        encoding="utf-8",
    )
    code, _, err = check(f"{tmp_path / 'pooled.py'}:train_bpe", str(CORPUS), cwd=tmp_path)
    assert code == 2
    lines = err.splitlines()
    assert '  File "pooled.py", line 10, in train_bpe' in lines and "in a worker process:" in lines
    assert '  File "pooled.py", line 5, in count' in lines and "    return 1 / 0" in lines
    assert lines[-1] == "ZeroDivisionError: division by zero"
    assert "multiprocessing" not in err.replace("from multiprocessing import Pool", "")


def test_a_syntax_error_says_where(tmp_path: Path) -> None:
    (tmp_path / "broken.py").write_text("def train_bpe(input_path, vocab_size, special_tokens)\n    return {}, []\n", encoding="utf-8")
    code, _, err = check(f"{tmp_path / 'broken.py'}:train_bpe", str(CORPUS), cwd=tmp_path)
    assert code == 2
    assert (
        err.splitlines()[0]
        == "bpe-tui: broken.py:train_bpe raised SyntaxError in importing broken.py; your code's frames, most recent call last:"
    )
    assert '  File "' in err and 'broken.py", line 1' in err and err.splitlines()[-1].startswith("SyntaxError: ")


def test_the_wrong_shape_is_one_line() -> None:
    line = refused(check_done("wrong_shape.py:train_bpe"), "wrong_shape.py:train_bpe returned the wrong shape: merges[0] is a str")
    assert line.endswith("expected a tuple of two bytes (merges: list[tuple[bytes, bytes]])")


def check_done(target: str, *args: str):
    return run_cli("check", f"{STUDENTS / target}", str(CORPUS), "--vocab-size", "300", "--headless", *args)


def test_a_time_out_says_so() -> None:
    refused(check_done("slow.py:train_bpe", "--timeout", "1"), "slow.py:train_bpe did not return within 1.00 s (--timeout 1): stopped")


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        ("right_trainer.py:train", "right_trainer.py has no train: it defines "),
        ("right_encoder.py:Tokenizer", "right_encoder.py:Tokenizer is a class: a trainer is a function"),
    ],
)
def test_what_is_not_a_trainer(target: str, expected: str) -> None:
    refused(check_done(target), expected)


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["right_trainer.py"], "right_trainer.py: name the file and the function or class in it, FILE.py:NAME"),
        (["missing.py:train_bpe"], "missing.py: no such file"),
        ([str(CORPUS) + ":train_bpe"], "not a Python file (.py)"),
        (["x.py:train_bpe", "--timeout", "0"], "--timeout 0: give your code some seconds to run"),
        (["--model", "m", "--vocab-size", "300"], "--vocab-size goes with a trainer"),
        (["--text", "hi"], "--text and --file go with --model"),
    ],
)
def test_bad_arguments_are_one_line(args: list[str], expected: str, tmp_path: Path) -> None:
    (tmp_path / "x.py").write_text("def train_bpe(a, b, c):\n    return {}, []\n", encoding="utf-8")
    first = args[0] if not args[0].startswith("-") else "x.py:train_bpe"
    rest = args[1:] if not args[0].startswith("-") else args
    done = run_cli("check", first, *rest, "--headless", cwd=tmp_path)
    refused(done, expected)


def test_a_corpus_the_function_cannot_read_is_refused(tmp_path: Path) -> None:
    (tmp_path / "a.jsonl").write_text('{"text": "hi"}\n', encoding="utf-8")
    done = run_cli("check", f"{STUDENTS / 'right_trainer.py'}:train_bpe", str(tmp_path / "a.jsonl"), "--headless")
    refused(done, "your function reads one plain-text file (its input_path)")


def test_a_corpus_not_utf8_is_refused_before_the_students_code_runs(tmp_path: Path) -> None:
    """As train refuses it, in one line: their code would fail on it and be blamed."""
    (tmp_path / "latin1.txt").write_bytes("the café and the cat\n".encode("latin-1"))
    (tmp_path / "marked.py").write_text(
        "from pathlib import Path\n\n\ndef train_bpe(input_path, vocab_size, special_tokens):\n"
        "    Path('ran').touch()\n    return {}, []\n",
        encoding="utf-8",
    )
    done = run_cli("check", "marked.py:train_bpe", "latin1.txt", "--headless", cwd=tmp_path)
    refused(done, "latin1.txt: not valid UTF-8 at byte offset 7")
    assert not (tmp_path / "ran").exists()


def test_the_students_prints_go_to_stderr(tmp_path: Path) -> None:
    (tmp_path / "chatty.py").write_text(
        f"import sys\nsys.path.insert(0, {str(STUDENTS)!r})\nfrom right_trainer import train_bpe as right\n\n\n"
        "def train_bpe(input_path, vocab_size, special_tokens):\n"
        "    print('training on', input_path)\n"
        "    return right(input_path, vocab_size, special_tokens)\n",
        encoding="utf-8",
    )
    code, out, err = check(f"{tmp_path / 'chatty.py'}:train_bpe", str(CORPUS), "--vocab-size", "300")
    assert code == 0 and out.startswith("43 of 43 merges match")
    assert "training on" in err and "training on" not in out


def test_serve_refuses_check_in_one_line() -> None:
    line = refused(run_cli("serve", "check", f"{STUDENTS / 'right_trainer.py'}:train_bpe", str(CORPUS)))
    assert "check runs a Python file with this machine's rights" in line
    refused(run_cli("serve", "check"), "serve check")


# -- the encoder -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tokenizer trained on the tiny stories at 400, as a student's encoder is built from."""
    trainer = Trainer.from_files(CORPUS, 400, SPECIAL)
    trainer.run()
    folder = tmp_path_factory.mktemp("model")
    Tokenizer.from_trainer(trainer).save_dir(folder)
    return folder


def test_a_right_encoder_gives_the_same_ids_on_every_hard_text(model: Path) -> None:
    code, out, err = check(f"{student('right_encoder.py')}:Tokenizer", "--model", str(model), "--text", "Once upon a time 你好")
    assert code == 0, err
    assert out.splitlines()[0] == "the same ids on 9 texts (the text given and 8 hard texts), and decode gives each back"


def test_an_encoder_that_ignores_special_tokens(model: Path) -> None:
    code, out, _ = check(f"{student('ignores_specials.py')}:Tokenizer", "--model", str(model))
    assert code == 1
    lines = out.splitlines()
    assert lines[0] == "special tokens side by side: token 0 differs: yours 60, the rule's 256"
    assert "“<|endoftext|>”, the 1st: the rule's [b'<|endoftext|>'] · yours [b'<', b'|', b'e'" in lines[1]
    assert "a special token: cut out of the text whole before pre-tokenizing, and never merged" in lines[2]


def test_an_encoder_merging_leftmost_first_names_the_pre_token_and_ranks(model: Path, tmp_path: Path) -> None:
    (tmp_path / "leftmost.py").write_text(
        f"import sys\nsys.path.insert(0, {str(STUDENTS)!r})\nfrom right_encoder import Tokenizer as Right\n\n\n"
        "class Tokenizer(Right):\n"
        "    def _merge(self, piece):\n"
        "        parts = [bytes([b]) for b in piece]\n"
        "        while True:\n"
        "            for i, pair in enumerate(zip(parts, parts[1:])):\n"
        "                if pair in self.ranks:\n"
        "                    parts[i : i + 2] = [parts[i] + parts[i + 1]]\n"
        "                    break\n"
        "            else:\n"
        "                return [self.ids[p] for p in parts]\n",
        encoding="utf-8",
    )
    code, out, _ = check(f"{tmp_path / 'leftmost.py'}:Tokenizer", "--model", str(model), "--text", "the cat sat on the mat")
    assert code == 1
    lines = out.splitlines()
    assert lines[0].startswith("the text given: token ")
    detail = {line.split()[0]: line for line in lines[1:]}
    assert "the rule's there, in order, the lowest rank first each round: " in detail["merges"] and "(rank " in detail["merges"]
    assert "pre-token" in detail and "holds what the rule does not make there" in detail["yours"]


def test_an_encoder_check_refuses_a_trainers_options(model: Path) -> None:
    refused(run_cli("check", f"{STUDENTS / 'right_encoder.py'}:Tokenizer", str(CORPUS), "--model", str(model), "--headless"), "CORPUS goes")
    done = run_cli("check", f"{STUDENTS / 'right_trainer.py'}:train_bpe", "--model", str(model), "--headless")
    refused(done, "right_trainer.py:train_bpe is not a class: an encoder is a class")


# -- the engine's comparisons ------------------------------------------------------------------


def test_shapes_name_the_first_value_that_is_wrong() -> None:
    good = ({0: b"a"}, [(b"a", b"b")])
    assert training_result(good) == good
    assert training_result([{0: b"a"}, [(b"a", b"b")]]) == good  # a list of the two is fine
    for value, said in [
        (({}, [], []), "returned a tuple of 3, expected (vocab, merges)"),
        (({0: "a"}, []), "vocab[0] is a str ('a'), expected bytes"),
        (({"0": b"a"}, []), "vocab has the key '0'"),
        (({}, [(b"a", b"b"), [b"a", b"b"]]), "merges[1] is a list of 2, expected a tuple of two bytes"),
        (({}, [(b"a", b"b", b"c")]), "merges[0] is a tuple of 3"),
        (({}, [(b"a", "b")]), "merges[0]'s right token is a str ('b'), expected bytes"),
        (({}, "a b"), "merges (the second of the two returned) is a str"),
    ]:
        with pytest.raises(ShapeError, match=None) as raised:
            training_result(value)
        assert said in str(raised.value)
    assert encode_result((1, 2), "encode(x)") == [1, 2]
    with pytest.raises(ShapeError, match=r"encode\(x\)\[1\] is a str \('2'\), expected an int"):
        encode_result([1, "2"], "encode(x)")


def test_first_difference_numbers_merges_from_one() -> None:
    a, b, c = (b"a", b"b"), (b"b", b"c"), (b"c", b"d")
    assert first_difference([a, b], [a, b]) is None
    assert first_difference([a, b], [a, c]) == 2
    assert first_difference([a, b], [a]) == 2 and first_difference([a], [a, b]) == 2


def test_a_tie_break_names_the_deciding_tokens_and_byte() -> None:
    assert tie_break((b" a", b"nd"), (b" ", b"d")) == tie_break((b" a", b"nd"), (b" ", b"d"))
    t = tie_break((b" a", b"nd"), (b" ", b"d"))
    assert (t.side, t.at, t.prefix) == ("left", 2, True)
    t = tie_break((b"e", b"d"), (b"e", b"c"))
    assert (t.side, t.at, t.greater, t.smaller, t.prefix) == ("right", 1, b"d", b"c", False)


def test_why_a_tie_went_to_the_greater_pair() -> None:
    """ab, bc and cd occur twice each: (c, d) wins the tie; a student who took (a, b) took the smallest."""
    trainer = Trainer.from_text("abcd abcd", 258)
    choice = explain_choice(trainer, (b"a", b"b"))
    assert choice.rule == (b"c", b"d") and choice.tie and choice.tied == 3
    assert choice.your_count == choice.rule_count == 2 and choice.your_rank == 3
    assert choice.hint == "smaller" and choice.tie_break is not None and choice.tie_break.side == "left"


def test_why_a_pair_that_stands_nowhere_lost() -> None:
    trainer = Trainer.from_text("ab ab cd", 258)
    choice = explain_choice(trainer, (b"b", b" "))  # across two pre-tokens
    assert choice.your_count == 0 and choice.your_rank is None and not choice.tie and choice.hint == "across"


def test_check_training_reports_every_kind() -> None:
    trainer = Trainer.from_files(CORPUS, 300, SPECIAL)
    trainer.run()
    vocab, merges = trainer.vocab, trainer.merges
    assert check_training(trainer, vocab, merges) == Agreement(43)
    swapped = dict(vocab)
    swapped[0], swapped[1] = vocab[1], vocab[0]
    different = check_training(trainer, swapped, merges)
    assert isinstance(different, VocabDifference) and different.token_id == 0 and different.same_tokens
    shorter = check_training(trainer, vocab, merges[:40])
    assert isinstance(shorter, MergeDifference) and shorter.index == 41 and shorter.yours is None and shorter.choice is None


def test_hard_texts_and_the_overlapping_special_token() -> None:
    names = [t.name for t in hard_texts(SPECIAL)]
    assert "the empty string" in names and "overlapping special tokens" in names and "emoji and CJK" in names
    assert not any("special" in t.name for t in hard_texts([]))
    vocab, specials = with_overlapping({0: b"a", 5: b"<|endoftext|>"}, SPECIAL)
    assert specials == ["<|endoftext|>", "<|endoftext|><|endoftext|>"] and vocab[6] == b"<|endoftext|><|endoftext|>"


def test_compare_encoding_places_the_first_difference(model: Path) -> None:
    tokenizer = Tokenizer.load(model)
    assert isinstance(tokenizer, Tokenizer)
    text = HardText("t", "the cat sat")
    ids = tokenizer.encode(text.text)
    assert compare_encoding(tokenizer, text, ids) is None
    bytes_of_sat = [tokenizer.encoder[bytes([b])] for b in b" sat"]
    traces = tokenizer.encode_steps(text.text)
    start = len(traces[0].ids) + len(traces[1].ids)
    difference = compare_encoding(tokenizer, text, ids[:start] + bytes_of_sat)
    assert difference is not None and difference.pretoken == 2 and difference.position == start
    assert difference.your_tokens == [b" ", b"s", b"a", b"t"] and b"".join(difference.rule_tokens) == b" sat"
    assert compare_decoding(text, "the cat sa") is not None and compare_decoding(text, "the cat sat") is None


def test_run_check_tells_what_it_does_on_the_way() -> None:
    phases: list[tuple[str, float | None]] = []
    options = TrainOptions(300, tuple(SPECIAL))
    job = TrainingCheck(Target.parse(f"{STUDENTS / 'slow.py'}:train_bpe"), str(CORPUS), CORPUS.name, options, timeout=0.6)
    verdict = run_check(job, lambda what, seconds: phases.append((what, seconds)))
    assert verdict.code == 2 and "did not return within" in str(verdict.lines[0])
    running = [seconds for what, seconds in phases if what == "running your train_bpe"]
    assert len(running) >= 3 and running == sorted(running) and running[-1] and running[-1] < 0.6  # type: ignore[operator]
