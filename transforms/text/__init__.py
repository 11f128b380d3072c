"""Text: what every metric needs to read words in any language.

Modules, lowest first (each imports only those above it):

- `scripts`: the writing system of a text or a character (Latin, CJK, ...).
- `tokens`: normalisation and tokenising (one definition of "a word").
- `stopwords`: stop words per language.
- `languages`: a text's language (script + stop-word vote), and whether two
  texts are in different languages.
- `nltk_stemmers`, `stemming`: stemmers per language (Porter, Snowball, Korean).
- `terms`: a text's content words and stemmed terms, in its language.
- `templates`: {placeholder} filling for prompt and request templates.
- `wording`: how evalbeam words a count in what it says ('1 row', '12,345 rows'),
  for the stages' messages, the reports and the command line alike.
"""
