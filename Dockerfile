# The image of the in-memory store (the default, what the challenge builds), and with `--target redis`
# the same image with the Redis client libraries added (GROWTH_STORE=redis://...); the code is the same.
#   docker build -t growth/python .                      # in-memory
#   docker build --target redis -t growth/python:redis . # in-memory or Redis
FROM python:3.11-slim AS build
ENV PYTHONDONTWRITEBYTECODE=1

# strip, for the debug symbols of the wheels' extension modules (4.5 of the 18 MB installed).
RUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends binutils \
    >/dev/null
COPY requirements.txt /tmp/
# Into plain folders on PYTHONPATH, not the base's site-packages: no pip, no scripts, no .pyc files (the
# official base has none for its own library either). The Redis client (redis-py, hiredis and what they
# need) goes into a folder of its own. Then out go what only the packages' own tests and builds read:
# test suites, C and Cython sources, type stubs.
RUN grep -vE '^(redis|hiredis)==' /tmp/requirements.txt >/tmp/memory.txt \
    && grep -E '^(redis|hiredis)==' /tmp/requirements.txt >/tmp/redis.txt \
    && for part in memory redis; do \
        python -m pip install --quiet --no-cache-dir --no-compile --disable-pip-version-check \
            --target /deps/$part -r /tmp/$part.txt || exit 1; \
    done \
    && rm -rf /deps/*/bin /deps/*/include \
    && find /deps -depth -type d \( -name tests -o -name testing -o -name bench -o -name __pycache__ \) \
        -exec rm -rf {} + \
    && find /deps -type f \( -name '*.c' -o -name '*.h' -o -name '*.pxd' -o -name '*.pyx' -o -name '*.pyi' \) \
        -delete \
    && find /deps -type d -empty -delete \
    && find /deps -name '*.so' -exec strip --strip-unneeded {} +
# Of swagger-ui-bundle's 8.3 MB, the files /docs serves (swagger_ui.BUNDLE_ASSETS, 1.2 MB); and not the
# Jinja2 it requires for a template that nothing here renders.
COPY growth_gevent /src/growth_gevent
RUN rm -rf /deps/memory/jinja2 /deps/memory/jinja2-*.dist-info /deps/memory/markupsafe \
        /deps/memory/markupsafe-*.dist-info \
    && PYTHONPATH=/deps/memory:/src python -c "import swagger_ui_bundle; \
from growth_gevent.api.swagger_ui import BUNDLE_ASSETS; \
[file.unlink() for file in swagger_ui_bundle.swagger_ui_path.iterdir() if file.name not in BUNDLE_ASSETS]"

FROM python:3.11-slim AS memory

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PYTHONPATH=/app/deps PORT=8080
WORKDIR /app
RUN useradd --system --no-create-home growth && mkdir /data && chown growth /data
COPY --from=build /deps/memory /app/deps
COPY growth_gevent /app/growth_gevent
USER growth
# For GROWTH_SNAPSHOT=/data/growth.snapshot with a volume mounted here.
VOLUME /data

EXPOSE 8080
# Readiness, not liveness: unhealthy while the store cannot be reached (GET /ready). The base has no curl.
HEALTHCHECK --interval=10s --timeout=5s --start-period=10s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/ready' % os.environ.get('PORT', '8080'), timeout=4)"]
# docker stop sends this signal, then SIGKILL after `-t` seconds (10 by default; `docker run --stop-timeout`,
# compose's stop_grace_period). The whole shutdown must fit in it: requests in flight get
# GROWTH_SHUTDOWN_TIMEOUT (8 s), then the last snapshot is written (42,450 records: under 0.1 s). Raise
# GROWTH_SHUTDOWN_TIMEOUT only with -t above it, or SIGKILL lands before the last snapshot and the writes
# acknowledged since the one before are lost.
STOPSIGNAL SIGTERM
# Exec form: Python is PID 1 and receives SIGTERM itself, so shutdown is graceful.
CMD ["python", "-m", "growth_gevent"]

FROM memory AS redis
ENV PYTHONPATH=/app/deps:/app/redis
COPY --from=build /deps/redis /app/redis

# The default: the last stage.
FROM memory
