# fairwatch - fairness monitor. Build from the repository root:
#   docker build -t fairwatch:0.1.0 .
#   docker run --rm -p 9810:9810 fairwatch:0.1.0 demo --host 0.0.0.0 --duration 0 --dir /tmp/demo
# The default command serves the config mounted at /etc/fairwatch/config.yaml (set `server.host: 0.0.0.0`).

# ---- build: install fairwatch and its dependencies (all from wheels) into a self-contained venv ----
FROM python:3.11-slim-bookworm AS build

ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

RUN python -m venv /opt/fairwatch

WORKDIR /src
COPY pyproject.toml README.md ./
COPY metrics_core/ metrics_core/
COPY monitor/ monitor/
# [postgres] adds psycopg (binary wheel) for PostgreSQL prediction / label sources.
RUN /opt/fairwatch/bin/pip install --no-cache-dir ".[postgres]"

# ---- runtime: the venv on a clean slim base; no compilers, no sources, no pip cache ----
FROM python:3.11-slim-bookworm

LABEL org.opencontainers.image.title="fairwatch" \
      org.opencontainers.image.description="Fairness monitor: per-group bias metrics exported to Prometheus, with alerts" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.version="0.1.0"

ENV PATH=/opt/fairwatch/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1

# A fixed numeric UID/GID (10001) so that Kubernetes' runAsNonRoot can verify it without /etc/passwd.
RUN groupadd --system --gid 10001 fairwatch \
    && useradd --system --no-log-init --uid 10001 --gid 10001 \
        --home-dir /var/lib/fairwatch --create-home --shell /usr/sbin/nologin fairwatch

COPY --from=build /opt/fairwatch /opt/fairwatch

WORKDIR /var/lib/fairwatch
USER 10001:10001
EXPOSE 9810

# Docker / Compose only (Kubernetes uses the probes in deploy/kubernetes): the default port's /healthz.
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:9810/healthz', timeout=4)"]

ENTRYPOINT ["fairwatch"]
CMD ["run", "--config", "/etc/fairwatch/config.yaml"]
