"""nltk's stemmers (Porter, Snowball), loaded without running `nltk/__init__.py`.

`from nltk.stem import porter` first executes nltk's package __init__, which
imports nearly all of nltk and, through nltk.metrics, scipy.stats: about a
second of a run's start-up, for two classes that need none of it. Here the
stemmer modules (and the few small modules they import) are loaded under empty
stand-ins for the `nltk` and `nltk.stem` packages and for `nltk.corpus` (whose
`stopwords` Snowball reads only with ignore_stopwords=True, which evalbeam
never passes); the stand-ins are removed at once, so a later `import nltk`
anywhere gets the real package. The stemmers are nltk's own code, so their
stems are nltk's.
"""
from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import types


def _drop_nltk_modules() -> None:
    for name in [n for n in sys.modules if n == "nltk" or n.startswith("nltk.")]:
        del sys.modules[name]


def _stand_ins(root: str) -> None:
    """Empty packages `nltk`, `nltk.stem` whose submodules load from nltk's
    folder, and an `nltk.corpus` without corpora."""
    for name in ("nltk", "nltk.stem"):
        package = types.ModuleType(name)
        package.__path__ = [os.path.join(root, *name.split(".")[1:])]
        sys.modules[name] = package
    corpus = types.ModuleType("nltk.corpus")
    corpus.stopwords = None
    sys.modules["nltk.corpus"] = corpus


def _load(module: str, attr: str) -> type:
    """module.attr the light way; the usual import when nltk is already loaded
    or the light way fails (another nltk layout)."""
    if "nltk" not in sys.modules:
        spec = importlib.util.find_spec("nltk")
        if spec is not None and spec.origin:
            _stand_ins(os.path.dirname(spec.origin))
            try:
                return getattr(importlib.import_module(module), attr)
            except Exception:  # noqa: BLE001 - fall back to the full import below
                pass
            finally:
                _drop_nltk_modules()
    return getattr(importlib.import_module(module), attr)


def porter_stemmer_class() -> type:
    """nltk.stem.porter.PorterStemmer."""
    return _load("nltk.stem.porter", "PorterStemmer")


def snowball_stemmer_class() -> type:
    """nltk.stem.snowball.SnowballStemmer."""
    return _load("nltk.stem.snowball", "SnowballStemmer")
