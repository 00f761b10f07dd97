"""Widgets grouped by the screen they belong to."""
