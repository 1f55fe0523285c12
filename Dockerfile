# heapjudge service image (used by docker-compose.yml).
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1
WORKDIR /srv/heapjudge

# setup.py: the optional C scan of TREC files (ranking/io/_trecscan.c); this image has no C
# compiler, so the install skips it and `heapjudge evaluate` reads with pyarrow and numpy.
COPY pyproject.toml setup.py README.md alembic.ini ./
COPY app ./app
COPY labeling ./labeling
COPY ranking ./ranking
COPY migrations ./migrations
COPY templates ./templates
# A regular install: templates/ goes to <prefix>/share/heapjudge/templates (pyproject
# data-files; app.kernel.settings.templates_dir), the Swagger UI assets come from fastapi-offline.
# The sources are removed afterwards so the installed copy is what runs.
RUN pip install . \
    && rm -rf app labeling ranking migrations templates build *.egg-info setup.py \
    && useradd --system --home /srv/heapjudge heapjudge
USER heapjudge

EXPOSE 8000
CMD ["heapjudge", "serve", "--host", "0.0.0.0", "--port", "8000"]
