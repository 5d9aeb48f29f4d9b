"""A small client for the Label Studio REST API (label-studio 1.2x), over httpx.

Why not ``label-studio-sdk``: its 2.1 release pins numpy 2.2 and another OpenCV build than
ours (``pip install --dry-run`` into the project venv would downgrade both), and we use six
endpoints. Each call here is one documented endpoint of the server's own API:

* ``GET /api/projects`` / ``POST /api/projects`` / ``PATCH /api/projects/<id>``;
* ``POST /api/storages/localfiles``: a local-files source on the project, without which the
  server refuses to serve ``/data/local-files/?d=…`` (the montage videos);
* ``POST /api/projects/<id>/import?return_task_ids=true``: tasks with their predictions;
* ``GET /api/tasks?project=<id>&fields=all``: tasks with annotations (paginated);
* ``DELETE /api/tasks/<id>``; ``GET /api/users``.

Two kinds of token exist in 1.2x: a legacy token (sent as ``Authorization: Token <key>``;
the organisation must allow legacy tokens, ``label-studio start --enable-legacy-api-token``)
and a personal access token, a JWT *refresh* token that is exchanged at
``POST /api/token/refresh`` for a short-lived access token sent as ``Bearer``. A token that
decodes as a JWT is treated as the latter.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Self

import httpx

from needleforge.errors import NeedleforgeError

PAGE_SIZE = 100
IMPORT_BATCH = 500  # tasks per import request: one request per round stays small


class LabelStudioError(NeedleforgeError):
    """The Label Studio server cannot be reached, refused the token, or answered a request
    with an error; the message names the server's URL and what it said."""


def is_personal_access_token(token: str) -> bool:
    """Whether ``token`` is a JWT (three base64url parts whose header names a JWT alg)."""
    parts = token.split(".")
    if len(parts) != 3:
        return False
    try:
        header = json.loads(base64.urlsafe_b64decode(parts[0] + "=" * (-len(parts[0]) % 4)))
    except (binascii.Error, ValueError, UnicodeDecodeError):
        return False
    return isinstance(header, dict) and "alg" in header


class LabelStudio:
    """A session with the server at ``url`` (e.g. ``http://127.0.0.1:8080``).

    Use as a context manager; the first request checks the server and the token.
    """

    def __init__(self, url: str, token: str, *, timeout_s: float = 30.0) -> None:
        if not url.startswith(("http://", "https://")):
            raise LabelStudioError(f"Label Studio URL {url!r} must start with http:// or "
                                   "https://")
        if not token.strip():
            raise LabelStudioError(f"Label Studio at {url}: no API token given (set "
                                   "LABEL_STUDIO_API_KEY or pass --ls-token)")
        self.url = url.rstrip("/")
        self._client = httpx.Client(base_url=self.url, timeout=timeout_s)
        self._token = token.strip()
        self._auth = ""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._client.close()

    # -- plumbing ---------------------------------------------------------------------------

    def _authorization(self) -> str:
        if not self._auth:
            if is_personal_access_token(self._token):
                access = self._send("POST", "/api/token/refresh",
                                    json={"refresh": self._token}, auth=False)
                self._auth = f"Bearer {access['access']}"
            else:
                self._auth = f"Token {self._token}"
        return self._auth

    def _request(self, method: str, path: str, *, json: Any, params: Mapping[str, Any] | None,
                 auth: bool) -> httpx.Response:
        headers = {"Authorization": self._authorization()} if auth else {}
        try:
            return self._client.request(method, path, json=json, params=params,
                                        headers=headers)
        except httpx.HTTPError as err:
            raise LabelStudioError(f"Label Studio at {self.url}: cannot reach the server "
                                   f"({err}); is `label-studio start` running on that "
                                   "address?") from None

    def _send(self, method: str, path: str, *, json: Any = None,
              params: Mapping[str, Any] | None = None, auth: bool = True) -> Any:
        where = f"Label Studio at {self.url}"
        response = self._request(method, path, json=json, params=params, auth=auth)
        if response.status_code == 401 and auth and self._auth.startswith("Bearer "):
            # access tokens live minutes; a long push (rendering) outlives one: refresh once
            self._auth = ""
            response = self._request(method, path, json=json, params=params, auth=auth)
        if response.status_code in (401, 403):
            raise LabelStudioError(f"{where} refused the API token on {method} {path} "
                                   f"(HTTP {response.status_code}: {_detail(response)}); check "
                                   "LABEL_STUDIO_API_KEY (a legacy token needs "
                                   "--enable-legacy-api-token)")
        if response.status_code >= 400:
            raise LabelStudioError(f"{where}: {method} {path} failed (HTTP "
                                   f"{response.status_code}: {_detail(response)})")
        if not response.content:
            return None
        try:
            return response.json()
        except ValueError:
            raise LabelStudioError(f"{where}: {method} {path} did not answer JSON (is this a "
                                   "Label Studio server?)") from None

    def _pages(self, path: str, params: Mapping[str, Any], key: str) -> Iterator[Any]:
        page = 1
        while True:
            body = self._send("GET", path, params={**params, "page": page,
                                                   "page_size": PAGE_SIZE})
            rows = body.get(key, []) if isinstance(body, dict) else body
            yield from rows
            if not isinstance(body, dict) or len(rows) < PAGE_SIZE:
                return
            total = body.get("total", body.get("count"))
            if total is not None and page * PAGE_SIZE >= int(total):
                return
            page += 1

    # -- endpoints ------------------------------------------------------------------------

    def version(self) -> str:
        """The server's release (``GET /api/version``, no token needed)."""
        body = self._send("GET", "/api/version", auth=False)
        return str(body.get("release", "unknown")) if isinstance(body, dict) else "unknown"

    def projects(self) -> list[dict[str, Any]]:
        return list(self._pages("/api/projects", {}, "results"))

    def create_project(self, fields: Mapping[str, Any]) -> dict[str, Any]:
        project: dict[str, Any] = self._send("POST", "/api/projects", json=dict(fields))
        return project

    def update_project(self, project_id: int, fields: Mapping[str, Any]) -> dict[str, Any]:
        project: dict[str, Any] = self._send("PATCH", f"/api/projects/{project_id}",
                                             json=dict(fields))
        return project

    def local_storages(self, project_id: int) -> list[dict[str, Any]]:
        body = self._send("GET", "/api/storages/localfiles", params={"project": project_id})
        return list(body or [])

    def add_local_storage(self, project_id: int, path: str, *, title: str) -> None:
        self._send("POST", "/api/storages/localfiles",
                   json={"project": project_id, "path": path, "title": title,
                         "use_blob_urls": False})

    def import_tasks(self, project_id: int, tasks: Sequence[Mapping[str, Any]]) -> list[int]:
        """Create ``tasks`` (each ``{"data": …, "predictions": […]}``), :data:`IMPORT_BATCH`
        a request; their new ids."""
        ids: list[int] = []
        for start in range(0, len(tasks), IMPORT_BATCH):
            body = self._send("POST", f"/api/projects/{project_id}/import",
                              params={"return_task_ids": "true"},
                              json=list(tasks[start:start + IMPORT_BATCH]))
            ids += [int(i) for i in body.get("task_ids", [])]
        return ids

    def tasks(self, project_id: int) -> list[dict[str, Any]]:
        """Every task of the project with its annotations and predictions."""
        return list(self._pages("/api/tasks", {"project": project_id, "fields": "all"},
                                "tasks"))

    def delete_task(self, task_id: int) -> None:
        self._send("DELETE", f"/api/tasks/{task_id}")

    def users(self) -> dict[int, str]:
        """User id → e-mail (the annotator's stable name)."""
        body = self._send("GET", "/api/users")
        rows = body.get("results", []) if isinstance(body, dict) else body
        return {int(u["id"]): str(u.get("email") or u.get("username") or u["id"])
                for u in rows}


def _detail(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text[:200].strip() or response.reason_phrase
    if isinstance(body, dict):
        detail = body.get("detail") or body.get("validation_errors") or body
        return str(detail)[:300]
    return str(body)[:300]
