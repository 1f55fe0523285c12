# heapjudge service image (used by docker-compose.yml).
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1
WORKDIR /srv/heapjudge

COPY pyproject.toml README.md alembic.ini ./
COPY app ./app
COPY labeling ./labeling
COPY ranking ./ranking
COPY migrations ./migrations
COPY templates ./templates
# Editable: templates/ is read from the source tree beside the packages.
RUN pip install -e . && useradd --system --home /srv/heapjudge heapjudge
USER heapjudge

EXPOSE 8000
CMD ["heapjudge", "serve", "--host", "0.0.0.0", "--port", "8000"]
