"""The training screen opened by ``bpe-tui check``: where a student's merges first differ.

The screen opens paused just before that merge (``TrainScreen(check=...)``), its status line
saying so (``status_note``), the pair table marking the rule's pair and the student's
(``PairTable.mark``), and its help saying how to read them (``checked_help``).
"""

from __future__ import annotations

from dataclasses import replace

from bpe_tui.common.screen_help import ScreenHelp
from engine.check.merges import MergeDifference

CHECK_PANEL = (
    "check: your merge K differs (bpe-tui check)",
    "Opened by bpe-tui check, the screen stands just before the first merge where your "
    "trainer's merges part from the rule's, paused. In the pair table ◀ rule marks the pair the "
    "rule merges next (the top) and ◀ yours the pair your trainer merged instead, in a row of its "
    "own when it is not among the top pairs, with its count in the corpus as merged so far. The "
    "line below says why the rule's wins: a greater count (the most frequent pair merges "
    "first), or a tie, which goes to the lexicographically greater pair of byte strings, the left "
    "tokens compared first (lecture 001). n makes the rule's merge and goes on with the rule; "
    "q goes back to the check.",
)
"""What ``?`` says of the marks, first among the panels."""


def status_note(difference: MergeDifference) -> str:
    return f"check: your merge {difference.index:,} differs"


def checked_help(entry: ScreenHelp) -> ScreenHelp:
    """The training screen's help with the check's marks explained first."""
    return replace(entry, panels=(CHECK_PANEL, *entry.panels))
