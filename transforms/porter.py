"""nltk's Porter stemmer, loaded without running `nltk/__init__.py`.

`from nltk.stem import porter` first executes nltk's package __init__, which
imports nearly all of nltk and, through nltk.metrics, scipy.stats: about a
second of every run's start-up, for one class that needs none of it. Here
nltk.stem.porter (and the three small modules it imports) are loaded under
empty stand-ins for the `nltk` and `nltk.stem` packages, which are removed
again at once, so a later `import nltk` anywhere gets the real package. The
stemmer is nltk's own code, so its stems are nltk's.
"""
from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import types

_PACKAGES = ("nltk", "nltk.stem")


def _nltk_modules() -> list[str]:
    return [name for name in sys.modules if name == "nltk" or name.startswith("nltk.")]


def _stand_in_packages(root: str) -> None:
    """Empty packages `nltk`, `nltk.stem` whose submodules load from nltk's folder."""
    for name in _PACKAGES:
        package = types.ModuleType(name)
        package.__path__ = [os.path.join(root, *name.split(".")[1:])]
        sys.modules[name] = package


def load_porter_stemmer() -> type:
    """nltk.stem.porter.PorterStemmer; the usual import when nltk is already
    loaded or the light way fails (another nltk layout)."""
    if "nltk" not in sys.modules:
        spec = importlib.util.find_spec("nltk")
        if spec is not None and spec.origin:
            _stand_in_packages(os.path.dirname(spec.origin))
            try:
                return importlib.import_module("nltk.stem.porter").PorterStemmer
            except Exception:  # noqa: BLE001 - fall back to the full import below
                pass
            finally:
                for name in _nltk_modules():
                    del sys.modules[name]
    from nltk.stem.porter import PorterStemmer
    return PorterStemmer
