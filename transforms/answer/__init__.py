"""Stage `answer`: AnswerWith and the bots: precomputed, faq_match (+ its index), remote bots."""
