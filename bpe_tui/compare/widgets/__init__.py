"""Widgets of the compare view."""
