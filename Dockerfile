FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PORT=8080
WORKDIR /app

# Dependencies in their own layer: rebuilt only when requirements.txt changes.
COPY requirements.txt .
RUN pip install --no-cache-dir -r requirements.txt

COPY growth_gevent ./growth_gevent
RUN useradd --system --no-create-home growth && mkdir /data && chown growth /data
USER growth
# For GROWTH_SNAPSHOT=/data/growth.snapshot with a volume mounted here.
VOLUME /data

EXPOSE 8080
# docker stop sends this signal, then SIGKILL after `-t` seconds (10 by default; `docker run --stop-timeout`,
# compose's stop_grace_period). The whole shutdown must fit in it: requests in flight get
# GROWTH_SHUTDOWN_TIMEOUT (8 s), then the last snapshot is written (42,450 records: under 0.1 s). Raise
# GROWTH_SHUTDOWN_TIMEOUT only with -t above it, or SIGKILL lands before the last snapshot and the writes
# acknowledged since the one before are lost.
STOPSIGNAL SIGTERM
# Exec form: Python is PID 1 and receives SIGTERM itself, so shutdown is graceful.
CMD ["python", "-m", "growth_gevent"]
