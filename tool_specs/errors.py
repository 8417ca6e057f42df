"""Errors raised while loading inventories."""

from __future__ import annotations


class InventoryError(ValueError):
    """An inventory or one of its tool specs is invalid; the message names the tool and the field."""
