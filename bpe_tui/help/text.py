"""What each screen shows, in the lecture's words: the text of ``?`` and ``bpe-tui explain``.

``SCREEN_HELP`` is keyed by the name ``bpe-tui explain`` takes; each entry names its screen
class, whose ``BINDINGS`` give the key list, so the keys shown are always the keys bound. A
new screen gets its help by adding an entry here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from rich.console import Group, RenderableType
from rich.style import Style
from rich.text import Text
from textual.app import App
from textual.binding import Binding, BindingType
from textual.keys import format_key
from textual.screen import Screen

from bpe_tui.compare.screen import CompareScreen
from bpe_tui.encode.screen import EncodeScreen
from bpe_tui.race.screen import RaceScreen
from bpe_tui.train.screen import TrainScreen
from bpe_tui.train.widgets.corpus_words import CorpusWords
from bpe_tui.train.widgets.heap_stats import HeapStats
from bpe_tui.train.widgets.merge_changes import MergeChanges
from bpe_tui.train.widgets.pair_in_corpus import PairInCorpus
from bpe_tui.train.widgets.pair_table import PairTable
from bpe_tui.train.widgets.vocab_growth import VocabGrowth


@dataclass(frozen=True)
class ScreenHelp:
    """A screen's help: what it is for, then each panel by its title."""

    title: str
    screen: type[Screen]
    intro: str
    panels: tuple[tuple[str, str], ...]


TOKEN_MARKS = (
    "Token bytes look the same everywhere: ␣ is a space, ↵ a newline, → a tab, and a byte "
    "that is not (yet) a whole UTF-8 character shows as an escape such as \\xe4."
)

SCREEN_HELP: dict[str, ScreenHelp] = {
    "train": ScreenHelp(
        title="the training screen",
        screen=TrainScreen,
        intro=(
            "Byte-level BPE training, one merge at a time, with the lecture's data structures. "
            "Every pre-token (整词) of the corpus is laid out once as token positions (token_idx) "
            "linked by prev/next. Each merge joins the most frequent adjacent pair into a new "
            "token and visits only the positions of that pair, never the whole corpus. Classic BPE "
            "(--classic) uses this screen with strings instead of bytes: each word ends in </w>, "
            "ties go to the pair seen first, and there is no encode view."
        ),
        panels=(
            (
                "merge K/TOTAL (the top line)",
                "Merges done out of those planned (vocabulary size minus 256 bytes and the special "
                "tokens), what the trainer is doing now, bytes per token so far and the play speed.",
            ),
            (
                PairTable.BORDER_TITLE,
                "The pairs with the highest counts in pair_counter (词对计数器), in the order the "
                "trainer picks them: the highest count, and on a tie the lexicographically greater "
                "pair of byte strings. The winner is highlighted, pairs tied with it are marked =, "
                "and counts the last merge changed show before→after.",
            ),
            (
                MergeChanges.BORDER_TITLE,
                "The merge a + b → ab, its new id and count, and the tied pairs it beat. At each "
                "position of the pair in pair_positions, prev_token (before a) loses the pair "
                "(prev_token, a) and gains (prev_token, ab); next_token (after b) loses (b, next_token) "
                "and gains (ab, next_token). These before→after counts are all a merge changes.",
            ),
            (
                HeapStats.BORDER_TITLE,
                "The sizes of the heap (优先队列), pair_counter and pair_positions, which is "
                "append-only: a stored position is checked when used, never removed. The heap is "
                "lazy: a merge only lowers counts, so old entries stay put and only pairs holding the "
                "new token are pushed. A stale pop is an entry that reaches the top with a count "
                "pair_counter no longer has: it is re-pushed with the true count, or dropped at zero.",
            ),
            (
                CorpusWords.BORDER_TITLE,
                "The most frequent pre-tokens, each split into its current tokens, with how often "
                "it occurs. Merges rewrite them as they land: ␣|t|h|e becomes ␣the in the first "
                "merges, as prev/next links join neighbouring positions into one.",
            ),
            (
                VocabGrowth.BORDER_TITLE,
                "Bytes per token on the whole corpus, which grows as merges land; the winning count "
                "of every merge, which falls as the common pairs are used up; and the newest tokens "
                "with their id and the count they won with.",
            ),
            (
                PairInCorpus.BORDER_TITLE,
                "Shown with o: where the pair about to merge lives, each word as the trainer holds "
                "it, one cell [position token] per token position, its prev/next links drawn ↔. The "
                "pair's recorded positions in pair_positions are live where the pair still starts "
                "(highlighted) and stale where a merge since changed a token: the merge checks those "
                "and skips them. After a merge, the same words before and after it: the pair's two "
                "cells joined into one, and the prev/next links it rewired marked.",
            ),
        ),
    ),
    "encode": ScreenHelp(
        title="the encode view",
        screen=EncodeScreen,
        intro=(
            "Encoding a text with a trained tokenizer, as GPT-2 does. The text is cut into "
            "pre-tokens, each pre-token into bytes; then, inside each pre-token, the adjacent pair "
            "with the lowest merge rank (its 0-based line in merges.txt, the order training "
            "learned it) merges first, until no pair is in the merge list. step K/TOTAL counts "
            "merges over the whole text."
        ),
        panels=(
            (
                "text",
                "The text being encoded. / (or tab) moves into it: it re-encodes as you type and "
                "shows the final tokens; esc goes back to stepping.",
            ),
            (
                "step K/TOTAL (the line below the text)",
                "The merge that comes next: its two tokens, its merge rank, and the pre-token it happens in.",
            ),
            (
                "tokens and ids",
                "The text as token spans in alternating colours, each id underneath. The pre-token "
                "being worked on is underlined, the pair that merges next is green and special "
                "tokens are gold.",
            ),
            (
                "pre-token",
                "The lecture's printout for ␣tech, live: the parts of the pre-token being worked "
                "on, every adjacent pair with its merge rank or “not in merges”, and the lowest "
                "rank marked: that pair merges now. When no pair is in the merges the pre-token "
                "is done.",
            ),
            (
                "stats",
                "Bytes, characters, tokens now and at the end, and bytes per token, against the "
                "same text as plain UTF-8 bytes (one token per byte).",
            ),
        ),
    ),
    "compare": ScreenHelp(
        title="the compare view",
        screen=CompareScreen,
        intro=(
            "One text, one row per tokenizer: the lecture's walk from characters to bytes, words "
            "and BPE, then any models you bring, side by side. The text is editable: shortly after "
            "typing stops every row re-tokenizes."
        ),
        panels=(
            (
                "the rows",
                "character: one token per code point, its id ord(ch); byte: one per UTF-8 byte, 256 "
                "of them; word: one per GPT-2 pre-token, from the corpus's words, <unk> for the "
                "rest; BPE: our byte-level BPE trained on the corpus; then each --model. The tokens "
                "are coloured with their ids underneath, as in the encode view.",
            ),
            (
                "the summary line of a row",
                "Its name, kind and vocabulary size; its tokens; bytes per token, the lecture's "
                "compression ratio (the text's bytes over its tokens: higher packs more text into "
                "each token); unknown tokens, in red (words not in the corpus, [UNK], <unk>); and "
                "how many of its tokens differ from the reference.",
            ),
            (
                "where the cuts differ (the line above the rows)",
                "One row is the reference: the first --model, else the trained BPE; r makes the "
                "focused row the reference. A token of another row is orange when the reference has "
                "no token with exactly its span (the same bytes, from the same start to the same "
                "end); tokens the reference shares keep the encode view's colours.",
            ),
            (
                "the cursor",
                "The token under the text cursor is underlined in every row, and every row scrolls "
                "to it, so one place in the text reads across all the tokenizers.",
            ),
        ),
    ),
    "race": ScreenHelp(
        title="the race",
        screen=RaceScreen,
        intro=(
            "The lecture's first trainer against the optimized one, on the same corpus, each in "
            "a process of its own. The reference recounts every adjacent pair of the whole corpus "
            "before each merge; the optimized trainer keeps pair_counter and pair_positions, and "
            "each merge visits only the positions of the merged pair, updating the counts of its "
            "prev/next neighbours and pushing new pairs on the lazy heap."
        ),
        panels=(
            (
                "race on FILE (the top lines)",
                "The corpus, the merges planned (vocabulary size minus 256 bytes and the special "
                "tokens) and its distinct pre-tokens. Both count the corpus with the same code, "
                "timed apart; what is raced is merging, from the pre-token counts to the last merge.",
            ),
            (
                "the two lanes",
                "One per racer: merges done of total on a bar, merging time, merges per second, the "
                "time left at that rate, and the time spent counting. Each racer times itself in "
                "its own process.",
            ),
            (
                "verdict",
                "Every merge is compared as soon as both have made it: they must agree pair for pair, "
                "in the same order, or the panel turns red with the merge number and both pairs. "
                "Once one racer finishes it shows the speed-up so far (the ratio of merge rates); "
                "once both have, the final one (the ratio of merging times).",
            ),
            (
                "merges side by side",
                "The newest merges of both racers, numbered in the order made, each marked ✓ where they agree and ✗ where they differ.",
            ),
        ),
    ),
}


Shown = Callable[[str], bool]
"""Whether a screen has an action at all: its ``offers(action)`` where it defines one (the
training screen under classic BPE has no encode view). Keys unavailable only for the moment
(dimmed by ``check_action``) are still listed."""


def help_for(screen: Screen) -> ScreenHelp | None:
    """The help entry of ``screen``'s class, if it has one."""
    return next((entry for entry in SCREEN_HELP.values() if type(screen) is entry.screen), None)


def key_rows(bindings: list[BindingType], shown: Shown = lambda action: True) -> list[tuple[str, str]]:
    """``(keys, what they do)`` for each binding whose action is ``shown``, in the order they
    are declared."""
    rows = []
    for binding in bindings:
        if not isinstance(binding, Binding) or not shown(binding.action.partition("(")[0]):
            continue
        keys = binding.key_display or " or ".join(format_key(key.strip()) for key in binding.key.split(","))
        rows.append((keys, binding.tooltip or binding.description))
    return rows


def render_help(
    entry: ScreenHelp, app_bindings: list[BindingType], heading: Style, dim: Style, shown: Shown = lambda action: True
) -> RenderableType:
    """The whole help text: the intro, each panel, the token marks, then the keys of the
    actions ``shown``."""
    parts: list[RenderableType] = [Text(entry.intro), Text()]
    for title, body in entry.panels:
        parts += [Text(title, heading), Text(body), Text()]
    parts += [Text(TOKEN_MARKS, dim), Text(), Text("keys", heading)]
    rows = key_rows([*entry.screen.BINDINGS, *app_bindings], shown)
    rows.append((format_key(App.COMMAND_PALETTE_BINDING), "Every key above as a command, by name"))
    width = max(len(key) for key, _ in rows)
    for key, does in rows:
        parts.append(Text.assemble((key.ljust(width + 2), heading), does))
    return Group(*parts)
