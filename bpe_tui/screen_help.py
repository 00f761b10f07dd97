"""What each screen shows, in the lecture's words: the text of ``?`` and ``bpe-tui explain``.

``SCREEN_HELP`` is keyed by the name ``bpe-tui explain`` takes; each entry names its screen
class, whose ``BINDINGS`` give the key list, so the keys shown are always the keys bound. A
new screen gets its help by adding an entry here.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.console import Group, RenderableType
from rich.style import Style
from rich.text import Text
from textual.app import App
from textual.binding import Binding, BindingType
from textual.keys import format_key
from textual.screen import Screen

from .encode_screen import EncodeScreen
from .train_screen import TrainScreen
from .widgets.train.corpus_words import CorpusWords
from .widgets.train.heap_stats import HeapStats
from .widgets.train.merge_changes import MergeChanges
from .widgets.train.pair_table import PairTable
from .widgets.train.vocab_growth import VocabGrowth


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
            "token and visits only the positions of that pair, never the whole corpus."
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
                "The merge that comes next: its two tokens, its merge rank, and the pre-token it "
                "happens in.",
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
}


def help_for(screen: Screen) -> ScreenHelp | None:
    """The help entry of ``screen``'s class, if it has one."""
    return next((entry for entry in SCREEN_HELP.values() if type(screen) is entry.screen), None)


def key_rows(bindings: list[BindingType]) -> list[tuple[str, str]]:
    """``(keys, what they do)`` for each binding, in the order they are declared."""
    rows = []
    for binding in bindings:
        if not isinstance(binding, Binding):
            continue
        keys = binding.key_display or " or ".join(format_key(key.strip()) for key in binding.key.split(","))
        rows.append((keys, binding.tooltip or binding.description))
    return rows


def render_help(entry: ScreenHelp, app_bindings: list[BindingType], heading: Style, dim: Style) -> RenderableType:
    """The whole help text: the intro, each panel, the token marks, then the keys."""
    parts: list[RenderableType] = [Text(entry.intro), Text()]
    for title, body in entry.panels:
        parts += [Text(title, heading), Text(body), Text()]
    parts += [Text(TOKEN_MARKS, dim), Text(), Text("keys", heading)]
    rows = key_rows([*entry.screen.BINDINGS, *app_bindings])
    rows.append((format_key(App.COMMAND_PALETTE_BINDING), "Every key above as a command, by name"))
    width = max(len(key) for key, _ in rows)
    for key, does in rows:
        parts.append(Text.assemble((key.ljust(width + 2), heading), does))
    return Group(*parts)
