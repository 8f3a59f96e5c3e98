# KernelJudge API + results step (no GPU). Build from the repository root:
#   docker build -f docker/api.Dockerfile -t kerneljudge-api .
# Ignore list: docker/api.Dockerfile.dockerignore (BuildKit reads it next to this file).

FROM python:3.11-slim AS build
# A CPU build of torch: the service side never runs kernels, it only imports grader/.
ARG TORCH_SPEC="torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu"
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
RUN python -m venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH
# hadolint ignore=SC2086
RUN pip install $TORCH_SPEC
WORKDIR /src
COPY . .
# The server extra: `pip install .` alone is the submitter's light client. grader/problem.py
# finds the built-in problems at <parent of grader/>/problems, which for an installed
# (non-editable) package is site-packages/kerneljudge.
RUN pip install ".[server]" \
 && cp -r problems "$(python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/kerneljudge/problems"

FROM python:3.11-slim
RUN useradd --create-home --uid 10001 --user-group kj \
 && mkdir /data && chown kj:kj /data
COPY --from=build /opt/venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    KJ_DATA_DIR=/data
USER kj
WORKDIR /home/kj
VOLUME ["/data"]
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
  CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=4)"]
ENTRYPOINT ["kerneljudge"]
CMD ["serve", "--host", "0.0.0.0", "--port", "8000"]
