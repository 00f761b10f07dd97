"""The race screen's panels: each racer's progress, the verdict, the merges side by side."""
