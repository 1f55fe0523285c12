"""Use case of the admin console: rename, describe and archive a collection."""

from __future__ import annotations

from sqlalchemy.exc import IntegrityError

from app.collections import repository
from app.kernel.db import Database
from app.kernel.errors import Conflict, Invalid, NotFound
from app.kernel.models import Collection
from labeling.identifiers import label_problem, text_problem


def update_collection(
    *,
    db: Database,
    collection_id: int,
    name: str | None = None,
    description: str | None = None,
    archived: bool | None = None,
) -> Collection:
    """Rename, re-describe, archive or un-archive a collection (409 if the name is taken)."""
    try:
        with db.write() as s:
            coll = repository.collection_by_id(s, collection_id)
            if coll is None:
                raise NotFound(f"no collection with id {collection_id}")
            if name is not None:
                if not name.strip():
                    raise Invalid("collection name must not be blank")
                if (problem := label_problem(name.strip())) is not None:
                    raise Invalid(f"collection name {problem}")
                coll.name = name.strip()
            if description is not None:
                if (problem := text_problem(description)) is not None:
                    raise Invalid(f"collection description {problem}")
                coll.description = description
            if archived is not None:
                coll.archived = archived
            s.flush()
    except IntegrityError as exc:
        raise Conflict(f"a collection named {name!r} already exists") from exc
    return coll
