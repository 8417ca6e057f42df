"""Errors raised on bad evaluator input (references, predictions, trace DB, options)."""

from __future__ import annotations


class EvalInputError(ValueError):
    """Bad input for the evaluator; the message names the file, the sample and the field."""

    def __init__(self, message: str, problems: list[str] | None = None) -> None:
        self.problems = list(problems or [])
        if self.problems:
            shown = self.problems[:20]
            more = len(self.problems) - len(shown)
            message = message + "\n  " + "\n  ".join(shown) + (f"\n  ... and {more} more" if more else "")
        super().__init__(message)


def where(sample_id: object, field: str) -> str:
    """Uniform 'sample X: field Y' prefix used in every validation message."""
    return f"sample {sample_id!r}: field {field!r}"
