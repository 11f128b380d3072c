"""Reading a classifier's prediction through the configured label map.

TEI answers a pair with every label's probability, `[{label, score}, ...]`
(softmax over the classes; a sigmoid for a one-class model), best first. The
map says which label means "supported" and which "contradicted": by name
(compared without case: ENTAILMENT = entailment) or by index, which TEI's
`/info` resolves to a name (model_type.classifier.id2label).
"""
from __future__ import annotations

from typing import Any, Mapping


class LabelError(ValueError):
    """The prediction or the server's label list does not fit the label map."""


def label_name(label: str | int, id2label: Mapping[str, str] | None) -> str:
    """The label's name: itself, or the name of index `label` in id2label."""
    if isinstance(label, str):
        return label
    if not id2label or str(label) not in id2label:
        raise LabelError(f"label index {label} is not one of the model's labels "
                         f"({dict(id2label or {})})")
    return str(id2label[str(label)])


def id2label_of(info: Any) -> dict[str, str]:
    """id2label from TEI's /info (model_type.classifier, or .reranker)."""
    model_type = info.get("model_type") if isinstance(info, dict) else None
    for kind in ("classifier", "reranker"):
        section = model_type.get(kind) if isinstance(model_type, dict) else None
        if isinstance(section, dict) and isinstance(section.get("id2label"), dict):
            return {str(k): str(v) for k, v in section["id2label"].items()}
    raise LabelError("the server's /info names no classifier labels (is it serving a "
                     "sequence-classification model?)")


def probabilities(prediction: Any) -> dict[str, float]:
    """{label (lower case): probability} of one TEI prediction."""
    if not isinstance(prediction, list) or not prediction:
        raise LabelError(f"unexpected prediction {str(prediction)[:200]}")
    out = {}
    for item in prediction:
        if not (isinstance(item, dict) and isinstance(item.get("label"), str)
                and isinstance(item.get("score"), (int, float))
                and not isinstance(item.get("score"), bool)):
            raise LabelError(f"unexpected prediction item {str(item)[:200]}")
        name = item["label"].lower()
        if name in out:  # which of the two is the model's? neither is guessed at
            raise LabelError(f"label {item['label'][:60]!r} is given twice in one prediction")
        out[name] = probability(item["score"])
    return out


def probability(score: Any) -> float:
    """A score read as a probability; LabelError if it is not one (NaN, inf,
    outside [0, 1]): a pair the model could not read is a failed pair."""
    value = float(score)
    if not 0.0 <= value <= 1.0:  # False for NaN too
        raise LabelError(f"score {value!r} is not a probability")
    return value


def read_prediction(prediction: Any, supported: str,
                    contradicted: str | None) -> tuple[float, float | None]:
    """(P(supported), P(contradicted) or None) of one pair's prediction."""
    probs = probabilities(prediction)
    missing = [name for name in (supported, contradicted)
               if name is not None and name.lower() not in probs]
    if missing:
        raise LabelError(f"label {missing[0]!r} is not among the model's labels "
                         f"({', '.join(sorted(probs))}); set classifier.labels")
    return probs[supported.lower()], (None if contradicted is None
                                       else probs[contradicted.lower()])
