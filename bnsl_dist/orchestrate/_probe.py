"""Is a Dask scheduler at this address? Asked once, within a deadline, before a client.

dask's ``connect`` retries the TCP connection until its timeout but then reads the peer's
handshake without one: a listener that accepts and never answers (a scheduler's own
dashboard port behind a proxy, a stuck service) hangs a client forever, and a service
that answers with other bytes (an HTTP server) has its reply read as a frame length
(``MemoryError: Unable to allocate 3.07 EiB``). :func:`probe_scheduler` connects, reads
the handshake and asks the peer's identity, all within one deadline, and turns every
failure into one :class:`~bnsl_dist.exceptions.InvalidConfigError` line.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import ssl
from typing import Any

from bnsl_dist.exceptions import InvalidConfigError

__all__ = ["probe_scheduler"]


async def _identity(address: str, timeout: float, connection_args: dict[str, Any],
                    reached: list[bool]) -> Any:
    from distributed.comm import connect

    comm = await connect(address, timeout=timeout, **connection_args)
    reached.append(True)  # the handshake came back: a dask process
    try:
        await comm.write({"op": "identity", "reply": True})
        return await comm.read()
    finally:
        comm.abort()


def _tls_refused(exc: BaseException | None) -> bool:
    """An SSL error anywhere in the chain (dask wraps it in its own errors)."""
    seen = 0
    while exc is not None and seen < 10:
        if isinstance(exc, ssl.SSLError) or "CERTIFICATE" in str(exc).upper():
            return True
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return False


def probe_scheduler(address: str, where: str, timeout: float, security: Any = None) -> None:
    """Return if a Dask scheduler answers at ``address`` within ``timeout`` seconds.

    Raises
    ------
    InvalidConfigError
        Nothing listens there (``cannot reach``), the TLS handshake failed (``the
        certificate was refused``), or what answers is not a Dask scheduler (no reply in
        time, bytes that are not dask's, or another dask process such as a worker).
        ``where`` names the address in the message.
    """
    args = security.get_connection_args("client") if security is not None else {}

    reached: list[bool] = []

    async def go() -> Any:
        return await asyncio.wait_for(_identity(address, timeout, args, reached), timeout)

    with concurrent.futures.ThreadPoolExecutor(1) as pool:  # a fresh event loop
        fut = pool.submit(asyncio.run, go())
        try:
            reply = fut.result()
        except TimeoutError as exc:
            if _tls_refused(exc):
                raise _refused(where, exc) from None
            if not reached and not _accepts(address):
                raise InvalidConfigError(f"cannot reach the scheduler at {where} within "
                                         f"{timeout:g} s (nothing listens there)") from None
            raise InvalidConfigError(
                f"{where} is not a Dask scheduler: it accepted the connection but did not "
                f"answer within {timeout:g} s (a dashboard or other service's port?)") from None
        except OSError as exc:
            if _tls_refused(exc):
                raise _refused(where, exc) from None
            raise InvalidConfigError(f"cannot reach the scheduler at {where} within "
                                     f"{timeout:g} s ({type(exc).__name__})") from None
        except Exception as exc:  # noqa: BLE001 - dask decoding foreign bytes: anything
            raise InvalidConfigError(
                f"{where} is not a Dask scheduler: its reply is not dask's protocol "
                f"({type(exc).__name__})") from None
    kind = reply.get("type") if isinstance(reply, dict) else None
    if kind != "Scheduler":
        raise InvalidConfigError(f"{where} is not a Dask scheduler (it says it is "
                                 f"{kind or 'something else'})")


def _accepts(address: str) -> bool:
    """Whether a plain TCP connection to ``address`` is accepted within a second."""
    import socket

    from distributed.comm.addressing import get_address_host_port

    try:
        with socket.create_connection(get_address_host_port(address), timeout=1.0):
            return True
    except (OSError, ValueError):
        return False


def _refused(where: str, exc: BaseException) -> InvalidConfigError:
    return InvalidConfigError(
        f"the scheduler at {where}: the TLS certificate was refused (a certificate from "
        f"another authority? give the cluster's own with --tls-dir)")
