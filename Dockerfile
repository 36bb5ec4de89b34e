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
# Exec form: Python is PID 1 and receives SIGTERM itself, so shutdown is graceful.
CMD ["python", "-m", "growth_gevent"]
