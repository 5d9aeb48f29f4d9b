"""``review:`` of ``params.yaml``: a Label Studio review round.

Read by ``needleforge review --to/--from label-studio``; its flags win, then the environment
(``LABEL_STUDIO_URL``, ``LOCAL_FILES_DOCUMENT_ROOT``), then these. The API token is never a
parameter (params files are committed): it comes from ``LABEL_STUDIO_API_KEY`` or
``--ls-token``.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from needleforge.params.base import ParamsSection as _Section


class ReviewParams(_Section):
    """Where a review round lives: the server, the project's title, judges per task."""

    label_studio_url: Annotated[str, Field(pattern=r"^https?://\S+$")] = \
        "http://127.0.0.1:8080"
    project: Annotated[str, Field(min_length=3)] = "needleforge review"
    annotators: Annotated[int, Field(ge=1, le=50)] = 1
