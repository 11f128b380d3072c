"""Facts: the checkable parts of a text, in many languages, below the metrics.

A metric that asks "does the answer state what the contexts state?" needs to
find figures, dates, times and names in any language and compare them by
value, not by spelling. This layer does that and nothing else; the metrics
(hallucination, groundedness, coverage) are formulas over it.

Modules, lowest first (each imports only those above it, and `transforms.text`):

- `anchors`: `Anchor` (a figure, date or time and its normal forms), `Spans`.
- `quantity_words`: where a quantity ends and a name begins.
- `names`: names, the words a name is matched by, acronyms.
- `dates`: dates, month-years, years, decades and centuries.
- `units`: a quantity's reading in its unit's base unit.
- `numbers`: figures, amounts, percentages, spelled numbers.
- `times`: times of day.
- `values`: one pass over a text for its dates, times and figures.
- `sentences`: sentences.
- `evidence`: the contexts indexed for looking those up.
- `support`: which of an answer's names and facts the contexts support.
"""
