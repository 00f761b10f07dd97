"""Widgets of the encode view."""
