# evalbeam's worker image, also usable as its Dataflow Flex Template launcher:
# Beam's Python 3.11 SDK image + the pinned requirements + evalbeam + the local
# embedding model's weights without torch + numba's fused kernels for it
# (--build-arg EVALBEAM_WORKER_FAST=0 leaves numba out). Build from the repository root:
#
#   docker build -t REGION-docker.pkg.dev/PROJECT/REPO/evalbeam:0.1.0 .
#
# BEAM_VERSION must be the apache-beam version pinned in requirements/worker.txt.
# LAUNCHER_IMAGE only provides the Flex Template launcher binary. It is pinned
# to a release tag (never :latest, which moves under a nightly job); pin it to
# the digest you tested with --build-arg LAUNCHER_IMAGE=...@sha256:...
ARG BEAM_VERSION=2.77.0
ARG LAUNCHER_IMAGE=gcr.io/dataflow-templates-base/python311-template-launcher-base:flex_templates_base_image_release_20240628_RC00

FROM ${LAUNCHER_IMAGE} AS launcher

FROM apache/beam_python3.11_sdk:${BEAM_VERSION}

ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONUNBUFFERED=1
WORKDIR /opt/evalbeam

# Dependencies first, so that a code change rebuilds only the last layers.
# EVALBEAM_WORKER_FAST=0: no numba (the numpy kernels give the same values, ~10% slower).
ARG EVALBEAM_WORKER_FAST=1
COPY requirements/worker.txt requirements/worker-fast.txt requirements/
COPY scripts/install_worker.sh scripts/minilm_wheel.py scripts/
RUN scripts/install_worker.sh deps

COPY setup.py README.md ./
COPY schemas/ schemas/
COPY transforms/ transforms/
COPY pipeline/ pipeline/
COPY deploy/ deploy/
RUN scripts/install_worker.sh app

# Flex Template launcher: runs deploy/flex_template_main.py with the template's
# parameters; the dependencies are in this image, so no requirements or setup
# file is staged at launch.
COPY --from=launcher /opt/google/dataflow/python_template_launcher /opt/google/dataflow/python_template_launcher
ENV FLEX_TEMPLATE_PYTHON_PY_FILE=/opt/evalbeam/deploy/flex_template_main.py

# Workers start Beam's SDK harness, as in the base image.
ENTRYPOINT ["/opt/apache/beam/boot"]
