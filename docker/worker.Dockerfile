# KernelJudge GPU worker: grades submissions for this container's GPU. Build from the
# repository root:
#   docker build -f docker/worker.Dockerfile -t kerneljudge-worker .
# Ignore list: docker/worker.Dockerfile.dockerignore. It needs only KJ_BROKER_URL.
#
# The devel image carries nvcc and the CUDA headers (load_inline); torch's CUDA wheels bring
# their own cuDNN, so the -cudnn- variant is not needed. Keep nvcc's major version equal to
# the torch wheel's CUDA (cu128 <-> 12.x): load_inline refuses a mismatch.
ARG CUDA_IMAGE=nvidia/cuda:12.8.1-devel-ubuntu24.04
FROM ${CUDA_IMAGE}
ARG TORCH_SPEC="torch==2.13.0 --index-url https://download.pytorch.org/whl/cu128"

# python3-dev and g++: load_inline and Triton compile against Python.h; bubblewrap: the
# sandbox the runner starts in; ninja: load_inline's build tool.
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      python3 python3-venv python3-dev build-essential ninja-build bubblewrap ca-certificates \
 && rm -rf /var/lib/apt/lists/*

ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
# /opt/venv: the sandbox binds /usr and /opt read-only, so the runner sees this interpreter.
RUN python3 -m venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH
# hadolint ignore=SC2086
RUN pip install $TORCH_SPEC
WORKDIR /src
COPY . .
# The server and Triton extras (`pip install .` alone is the submitter's light client); the
# built-in problems next to the installed grader/, in site-packages/kerneljudge (only for
# `kerneljudge grade NAME`; a queued grading carries its problem's files in the job).
RUN pip install ".[server,triton]" \
 && cp -r problems "$(python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/kerneljudge/problems" \
 && cd / && rm -rf /src

RUN useradd --create-home --uid 10001 --user-group kj \
 && mkdir /data && chown kj:kj /data
ENV PYTHONUNBUFFERED=1 \
    CUDA_HOME=/usr/local/cuda \
    KJ_DATA_DIR=/data
USER kj
WORKDIR /home/kj
ENTRYPOINT ["kerneljudge"]
CMD ["worker"]
