"""Start-up stays light: what a run imports before it needs it (checked in a
fresh interpreter, since this test process has imported everything), and the
stemmers loaded without nltk's package __init__ stem as nltk's do."""
from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.conftest import ROOT

# Heavy modules that `evalbeam run` needs late (report charts) or only for some
# configs or commands (compare's DuckDB), or not at all (nltk's package, scipy.stats).
NOT_AT_IMPORT = ("altair", "vl_convert", "duckdb", "nltk", "scipy.stats", "scipy.sparse",
                 "scipy.special", "jsonschema")

_STEMS = """
import json, re, sys
import pyarrow.parquet as pq
from transforms.text.stemming import SNOWBALL
from transforms.text.nltk_stemmers import porter_stemmer_class, snowball_stemmer_class
light = ("nltk" not in sys.modules, porter_stemmer_class(), snowball_stemmer_class())
words = sorted({w.lower() for r in pq.read_table(sys.argv[1]).to_pylist() for v in r.values()
                for x in (v if isinstance(v, list) else [v]) if isinstance(x, str)
                for w in re.findall(r"\\w+", x)})
def stems(porter, snowball):
    return ([porter().stem(w) for w in words]
            + [snowball(lang).stem(w) for lang in sorted(SNOWBALL.values()) for w in words])
ours = stems(*light[1:])
assert "nltk" not in sys.modules
from nltk.stem.porter import PorterStemmer
from nltk.stem.snowball import SnowballStemmer
print(json.dumps({"light": light[0], "words": len(words),
                  "same": ours == stems(PorterStemmer, SnowballStemmer)}))
"""


def _python(code: str, *args: str) -> str:
    env = {**os.environ, "PYTHONPATH": ROOT}
    proc = subprocess.run([sys.executable, "-c", code, *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip().splitlines()[-1]


def test_importing_the_cli_leaves_heavy_optional_modules_out():
    code = ("import json, sys, pipeline.cli; pipeline.cli._parser(); "  # and its --help texts
            f"print(json.dumps([m for m in {NOT_AT_IMPORT!r} if m in sys.modules]))")
    assert json.loads(_python(code)) == []


def test_stemmers_loaded_without_nltk_init_stem_as_nltk_does():
    result = json.loads(_python(_STEMS, os.path.join(ROOT, "examples", "support",
                                                     "cases.parquet")))
    assert result == {"light": True, "words": result["words"], "same": True}
    assert result["words"] > 1000
