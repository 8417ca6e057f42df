"""The drift audit's parts, one job each: value diff (``values``), normalisers (``normalise``),
definition diff (``definitions``), severity (``severity``), answers (``answers``), report writers
(``report``, ``html``)."""
