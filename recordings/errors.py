"""Exceptions raised by the recordings package (all subclass :class:`RecordingsError`)."""

from __future__ import annotations


class RecordingsError(Exception):
    """Base class for every error of the recordings data layer."""


class SchemaError(RecordingsError):
    """The database cannot be opened or migrated (foreign file, downgrade, corrupt version)."""


class SchemaVersionError(SchemaError):
    """The database was written by a newer finmcp whose schema this version does not know."""


class InvalidValueError(RecordingsError, ValueError):
    """A value handed to the data layer is malformed; the message names the field and why."""


class UnknownCallError(RecordingsError, LookupError):
    """A trace operation named a call id that does not exist."""


class CallStateError(RecordingsError):
    """A trace operation does not fit the call's state (e.g. finishing a call twice)."""
