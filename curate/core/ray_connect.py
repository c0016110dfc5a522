"""Connecting to a Ray cluster as a client, with a refusal turned into one line.

Takes the ``ray`` module as an argument: :mod:`curate.core.ray_engine` stays the one module that imports it.
"""

from __future__ import annotations

import os
from typing import Any

from curate.core.engine_base import EngineError


def _connect(ray: Any, address: str, kwargs: dict[str, Any]) -> None:
    """``ray.init`` as a client of the cluster at ``address``, turning an auth refusal into one line."""
    try:
        try:
            ray.init(address=address, **kwargs)
        except ConnectionError as e:  # Ray 2.60 wraps the refusal: ConnectionError from AuthenticationError
            refusal = _auth_refusal(ray, e)
            if refusal is None:
                raise EngineError(
                    f"cannot connect to the Ray cluster at {address} ({' '.join(str(e).split())}); check "
                    "--address / RAY_ADDRESS and that the cluster is up (`ray status` on the head)"
                ) from None
            raise refusal from None
    except ray.exceptions.AuthenticationError:
        mode = os.environ.get("RAY_AUTH_MODE", "")
        if mode != "token":
            fix = (
                f"RAY_AUTH_MODE is {mode or 'unset'}: set RAY_AUTH_MODE=token and the cluster's token "
                "(RAY_AUTH_TOKEN_PATH=FILE or RAY_AUTH_TOKEN; `ray get-auth-token` on the head prints it)"
            )
        else:
            fix = "this client's token is not the cluster's: set RAY_AUTH_TOKEN_PATH or RAY_AUTH_TOKEN to it"
        raise EngineError(
            f"the Ray cluster at {address} requires token authentication (on by default since Ray 2.60); "
            f"{fix}. See docs/cluster.md"
        ) from None


def _auth_refusal(ray: Any, e: BaseException) -> BaseException | None:
    """Ray's authentication refusal, when ``e`` or an exception ``e`` was raised from is one, or carries
    one as text (Ray's GCS client reports its last connection error as a formatted traceback)."""
    seen: BaseException | None = e
    while seen is not None:
        if isinstance(seen, ray.exceptions.AuthenticationError):
            return seen
        if "InvalidAuthToken" in str(seen) or "AuthenticationError" in str(seen):
            return ray.exceptions.AuthenticationError(str(seen))
        seen = seen.__cause__ or seen.__context__
    return None
