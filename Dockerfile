# The svc runtime image: Open WebUI (pinned by digest) + the svc binary + svc_chatui.
# Build (linux/amd64 only), daemonless and reproducible: scripts/release.sh (buildah). By hand:
#   bun run build
#   buildah bud --platform linux/amd64 --timestamp 0 \
#     --build-arg OPENWEBUI_IMAGE=ghcr.io/open-webui/open-webui@sha256:<digest> -t svc-runtime .
# (`docker build` with the same --build-arg works too.) The base is upstream's image, or the
# stand-in scripts/image/base.sh builds (Debian + open-webui from PyPI, laid out the same way).
# Deploy by digest (scripts/release.sh writes dist/image-digest.txt with an `image=` line).
ARG OPENWEBUI_IMAGE=ghcr.io/open-webui/open-webui@sha256:0000000000000000000000000000000000000000000000000000000000000000
FROM --platform=linux/amd64 ${OPENWEBUI_IMAGE}

USER root
# What this file assumes of the base, checked here so a base laid out differently fails the
# build with the reason instead of a container that fails at start:
RUN set -e; fail() { echo "Dockerfile: the base image $1 (expected upstream Open WebUI's layout; see docs/deploy.md)" >&2; exit 1; }; \
    [ -f /app/backend/open_webui/main.py ] || fail "has no Open WebUI package at /app/backend/open_webui"; \
    [ -f /app/build/index.html ] && [ -d /app/build/static ] || fail "has no web build at /app/build (index.html, static/)"; \
    command -v python3 >/dev/null || fail "has no python3 on PATH"; \
    command -v uvicorn >/dev/null || fail "has no uvicorn on PATH"; \
    (cd /app/backend && python3 -c "import importlib.util, sys; sys.exit(importlib.util.find_spec('open_webui') is None)") || fail "cannot import open_webui from /app/backend"; \
    command -v groupadd >/dev/null && command -v useradd >/dev/null || fail "has no groupadd/useradd"
# The container user and group (spec §8): UID/GID 10001, owner of the state volume, which is
# also its HOME (the base image sets HOME=/root, where UID 10001 cannot write: Python
# libraries writing ~/.cache or ~/.config would fail).
RUN groupadd --system --gid 10001 svc \
 && useradd --system --uid 10001 --gid 10001 --home-dir /var/lib/svc --shell /usr/sbin/nologin svc \
 && mkdir -p /var/lib/svc /opt/svc/python \
 && chown -R 10001:10001 /var/lib/svc \
 && chmod 0750 /var/lib/svc \
 # Open WebUI copies its favicon and loader into STATIC_DIR at every start: `svc run` points it
 # at the state volume ($SVC_STATE_DIR/chatui-static), so a read-only root logs no errors.
 # The base image points its model caches (HF_HOME, TIKTOKEN_CACHE_DIR, WHISPER_MODEL_DIR, ...)
 # at /app/backend/data/cache: UID 10001 may add files there; the files baked in stay root's.
 && if [ -d /app/backend/data ]; then find /app/backend/data -type d -exec chown 10001:10001 {} + ; fi

# The one svc binary (bun build --compile; see scripts/build.ts) and a copy of svc_chatui for
# hand diagnosis (`python -m svc_chatui.boot --export-manifest`). At start `svc run` writes the
# package embedded in the binary to $SVC_STATE_DIR/python and puts it first on PYTHONPATH, so
# the front end always runs the svc_chatui that matches the binary. The package's modes are
# set after the copy: COPY --chmod on a directory gives the directories that mode too (0644:
# not enterable), depending on the builder; and nothing is world-writable whatever the
# build context's modes were.
COPY --chmod=0755 dist/svc /usr/local/bin/svc
COPY src/guard-bridge/python/svc_chatui/ /opt/svc/python/svc_chatui/
RUN chmod -R u=rwX,go=rX /opt/svc/python

ENV HOME=/var/lib/svc \
    SVC_PROXY_PATH=/usr/local/bin/svc \
    SVC_STATE_DIR=/var/lib/svc \
    SVC_RUNTIME_SOCKET_PATH=/var/lib/svc/proxy.sock \
    SVC_PROXY_AUDIT=/var/lib/svc/audit-spool \
    SVC_CHATUI_HOST=0.0.0.0 \
    SVC_CHATUI_PORT=8080 \
    SVC_CHATUI_COMMAND="uvicorn open_webui.main:app --host {host} --port {port} --forwarded-allow-ips *" \
    SVC_CHATUI_PYTHON=python3 \
    PYTHONPATH=/opt/svc/python:/app/backend \
    DATA_DIR=/var/lib/svc/chatui \
    ENABLE_OPENAI_API=false \
    ENABLE_OLLAMA_API=false \
    ENABLE_DIRECT_CONNECTIONS=false \
    ENABLE_TOOL_SERVERS=false \
    USER_PERMISSIONS_WORKSPACE_TOOLS_ACCESS=false \
    USER_PERMISSIONS_WORKSPACE_TOOLS_IMPORT=false \
    ENABLE_PIP_INSTALL_FRONTMATTER_REQUIREMENTS=false \
    OFFLINE_MODE=true \
    RAG_EMBEDDING_ENGINE=openai \
    RAG_EMBEDDING_MODEL_AUTO_UPDATE=false \
    RAG_RERANKING_MODEL_AUTO_UPDATE=false

WORKDIR /app/backend
VOLUME ["/var/lib/svc"]
EXPOSE 8080
USER 10001:10001
ENTRYPOINT ["svc", "run"]
