"""The grounding classifier: (passage, answer sentence) pairs read by a
sequence-classification model behind an HTTP endpoint (TEI's /predict or
vLLM's /score), for the `grounding_classifier` metric."""
