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


# What a run imports only when it uses it (issue 26): the judge (its stage,
# questions, prompts, scorers), the embedding stage and the embedders, the HTTP
# client, and the post-run / report-only libraries. Not pandas: where it is
# installed (the `pandas` and `test` extras) Beam's typehints package and
# pyarrow.dataset import it themselves; a plain install has none.
LAZY = ("altair", "vl_convert", "duckdb", "httpx", "tenacity", "tokenizers",
        "safetensors", "transforms.enrich.embed", "transforms.enrich.embeddings",
        "transforms.enrich.judge.stage", "transforms.enrich.judge.tasks",
        "transforms.enrich.judge.ask", "transforms.enrich.judge.scorers",
        "transforms.enrich.judge.conversation", "transforms.enrich.judge.prompts",
        "transforms.remote.client", "transforms.remote.runtime")

# Runs pipeline.cli.main with the given arguments in a fresh interpreter and
# prints, when the process leaves (os._exit, SystemExit from --help), which of
# LAZY's modules (or their submodules) it had imported and how many child
# processes it had started (read from /proc: the parent id in each process's stat).
_IMPORTED_BY = """
import glob, json, os, sys
lazy = json.loads(sys.argv[1])
def children():
    n = 0
    for stat in glob.glob("/proc/[0-9]*/stat"):
        try:
            text = open(stat).read()
        except OSError:
            continue
        n += int(text[text.rindex(")") + 2:].split()[1]) == os.getpid()
    return n
def report():
    print(json.dumps({"modules": sorted({m for m in lazy for name in sys.modules
                                         if name == m or name.startswith(m + ".")}),
                      "children": children()}), flush=True)
real_exit = os._exit
os._exit = lambda code: (report(), real_exit(code))
from pipeline.cli import main
try:
    main(sys.argv[2:])
except SystemExit:
    report()
"""


def _imported_by(*args: str) -> dict:
    return json.loads(_python(_IMPORTED_BY, json.dumps(LAZY), *args))


def test_run_help_imports_nothing_a_run_may_not_need():
    assert _imported_by("run", "--help")["modules"] == []


def test_a_small_offline_run_imports_no_judge_or_embedder_and_starts_no_process(tmp_path):
    """A real 258-row run (FnApiRunner in this process) of offline metrics: no
    judge, no embedder, no HTTP client, no child process (the report's charts,
    read back here, are drawn in the run's own process)."""
    from transforms.publish.chart_engine import CHILD_FROM_ROWS
    cases = os.path.join(ROOT, "examples", "support", "cases.parquet")
    out = tmp_path / "out"
    got = _imported_by("run", "--input", cases, "--output", str(out), "--run-id", "small",
                       "--run-date", "2024-01-01", "--runner=FnApiRunner",
                       "--metrics", "exact_match,bleu,rougeL,hallucination")
    assert got == {"modules": ["vl_convert"], "children": 0}  # the report's charts, here
    assert 258 < CHILD_FROM_ROWS
    html = (out / "runs" / "small" / "report.html").read_text(encoding="utf-8")
    assert html.count('src="data:image/svg+xml;base64,') >= 2


def test_the_judge_modules_rule_metric_imports_no_http_client():
    """context_entities_recall (in the default suite, by rules without a judge)
    lives in the judge's scorers module: importing it leaves the judge's asking
    side and the HTTP client out."""
    code = ("import json, sys, transforms.enrich.judge.scorers; "
            "print(json.dumps(sorted(m for m in sys.modules if m in {'httpx', 'tenacity', "
            "'transforms.enrich.judge.ask', 'transforms.remote.client', "
            "'transforms.remote.openai_api'})))")
    assert json.loads(_python(code)) == []


def _leaves(plan_args: list[str], tmp_path) -> list[str]:
    """Names of the primitive transforms of evalbeam's pipeline for these arguments."""
    import apache_beam as beam
    from pipeline import cli
    from pipeline.execute import beam_options
    from pipeline.graph import build_pipeline
    args, beam_args = cli._parser().parse_known_args(
        ["run", "--output", str(tmp_path / "out"), "--run-id", "shape",
         "--run-date", "2024-01-01", *plan_args])
    options = beam_options(beam_args)
    p = beam.Pipeline(options=options)
    build_pipeline(p, cli.make_plan(args, options))
    proto = p.to_runner_api()
    return [t.unique_name for t in proto.components.transforms.values() if not t.subtransforms]


def test_a_default_run_builds_no_branch_it_cannot_use(tmp_path):
    """Fewer primitive transforms (issue 26): without a cascade or a judge sample
    no row can be skipped, so there is nothing to count; without an endpoint
    nothing calls out, so there is no usage to combine; the corpus statistics
    are singleton views whose empty-corpus value is computed when the graph is
    built (no default-injecting branch). A cascade still counts skipped rows
    (tests/test_cascade.py, tests/test_judge_sample.py check the counts)."""
    cases = os.path.join(ROOT, "examples", "support", "cases.parquet")
    names = _leaves(["--input", cases], tmp_path)
    assert any(n.startswith("Score/DocumentFrequencies/") for n in names)  # idf is used
    assert not [n for n in names if "SkippedKeys" in n or "CountSkipped" in n
                or "DoOnce" in n or "InjectDefault" in n or "Usage" in n or "AllCalls" in n]
    config = tmp_path / "cascade.yaml"
    config.write_text("endpoints:\n  llm: {base_url: 'http://127.0.0.1:9/v1'}\n"
                      "judge: {endpoint: llm, model: j, escalate: undecided}\n"
                      "metrics: [exact_match, judge_relevance]\n"
                      "verdict:\n  rules:\n    - {metric: exact_match, below: 1, verdict: WARN}\n"
                      "    - {metric: judge_relevance, below: 0.5, verdict: FAIL}\n")
    names = _leaves(["--input", cases, "--config", str(config)], tmp_path)
    for part in ("SkippedKeys", "CountSkipped", "AllCalls", "Publish/Usage/"):
        assert any(part in n for n in names), part


def test_the_local_model_is_preloaded_once_only_for_a_run_that_embeds(tmp_path):
    """preload_local_model loads the process-wide MiniLM on a thread while the
    graph is built; the embedding DoFn then gets that same instance. A run
    without semantic metrics, or with another embedder, starts no thread."""
    from pipeline import cli
    from pipeline.execute import beam_options, preload_local_model
    from transforms.enrich.embed import make_embedder
    from transforms.enrich.embeddings import local_minilm

    def plan(*extra: str):
        args, beam_args = cli._parser().parse_known_args(
            ["run", "--input", os.path.join(ROOT, "examples", "support", "cases.parquet"),
             "--output", str(tmp_path / "out"), "--run-id", "pre", "--run-date",
             "2024-01-01", *extra])
        return cli.make_plan(args, beam_options(beam_args))

    assert preload_local_model(plan("--metrics", "exact_match,bleu")) is None
    config = tmp_path / "hashing.yaml"
    config.write_text("embeddings: {provider: hashing}\n")
    assert preload_local_model(plan("--config", str(config))) is None
    before = local_minilm.LocalMiniLM.loads
    thread = preload_local_model(plan())
    assert thread is not None
    thread.join(timeout=120)
    assert local_minilm.LocalMiniLM.loads <= before + 1  # none if this process had it
    default = plan().config.embeddings
    assert make_embedder(default).inner is local_minilm.get_local_minilm()
    assert local_minilm.LocalMiniLM.loads <= before + 1
