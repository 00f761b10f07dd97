"""``bpe-tui check``: a student's BPE trainer or encoder held against the exact one."""
