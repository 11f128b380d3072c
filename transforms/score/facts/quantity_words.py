"""Where a quantity ends and a name begins: the words that qualify an amount
and the shapes of a figure that are never the number of a name. Both the name
finder and the figure finder ask."""
from __future__ import annotations

import re

# a figure after a name that is a year, not part of the name ("Tony Clunn 1987")
YEAR_AFTER_NAME = re.compile(r"(?:1[0-9]|20)\d\d")
# a thousands separator after a figure's first digits: an amount ("2,000"), not
# the number of a name ("Voyager 2"); used by the number anchors too
THOUSANDS = re.compile(r"[,\u202f\u00a0 ']\d{3}(?!\d)")
# words that mark a figure as approximate ("about 50 €", "environ 50 €")
APPROXIMATE_WORDS = frozenset({
    "about", "around", "roughly", "approximately", "approx", "nearly", "almost", "some",
    "circa", "environ", "presque", "etwa", "rund", "ungefähr", "knapp", "unos", "unas",
    "aproximadamente", "casi", "quasi"})
# words that qualify an amount ("Roughly 2 cm", "Rund 28 Jahre"): never part of a
# name, even when capitalised at the start of a sentence
QUANTITY_WORDS = APPROXIMATE_WORDS | {"exactly", "over", "under", "only", "just", "fast", "über",
                                      "près", "cerca"}
