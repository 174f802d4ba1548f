# Grove's image for compose.yaml: one image, run as web, worker, beat or migrate.
FROM python:3.12-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 GROVE_HOME=/var/lib/grove
RUN useradd --system --home-dir /var/lib/grove --create-home grove
WORKDIR /app
COPY pyproject.toml README.md ./
COPY grove grove
COPY passages passages
COPY notebooks notebooks
COPY ask ask
COPY sharing sharing
COPY templates templates
COPY static static
RUN pip install --no-cache-dir .
USER grove
EXPOSE 8000
CMD ["grove", "serve", "--host", "0.0.0.0", "--port", "8000", "--no-migrate"]
