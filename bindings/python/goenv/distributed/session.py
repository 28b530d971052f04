"""Joining or starting Ray, time-bounded, and leaving it as found.

`connect` either joins the cluster at `address` (started with `ray start --head`)
or starts a local Ray on this machine (address=None). An address that does not
answer fails within `timeout` seconds with ConnectionError, before any worker
starts; ray.init alone would retry for minutes.
"""

from __future__ import annotations

import contextlib
import signal
import threading

from goenv._core import InvalidArgument
from goenv.extras import import_extra

LOCAL = (None, "", "local")


def require_ray(feature: str = "goenv.distributed"):
    """The ray module; ImportError naming the extra that installs it when it is missing (checked
    before any work, so a run without Ray fails at once, not after building its agent)."""
    return import_extra("ray", extra="distributed", feature=feature)


def check_address(address: str | None) -> str | None:
    """The address as ray.init takes it; goenv.InvalidArgument (a ValueError) on a malformed one,
    before anything starts."""
    if address in LOCAL:
        return None
    if not isinstance(address, str):
        raise InvalidArgument(f"address must be a string like 'HOST:6379', 'auto' or 'ray://HOST:10001', got "
                              f"{address!r}")
    if address == "auto":
        return address
    rest = address[len("ray://"):] if address.startswith("ray://") else address
    host, colon, port = rest.rpartition(":")
    if not colon or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise InvalidArgument(f"bad Ray address {address!r}: expected HOST:PORT (e.g. 10.0.0.1:6379, what `ray "
                              "start --head` prints), 'auto', or ray://HOST:PORT")
    return address


def probe(address: str, timeout: float) -> None:
    """ConnectionError unless a Ray GCS answers at `address` within `timeout` seconds."""
    import ray

    if address == "auto" or address.startswith("ray://"):
        return  # ray.init resolves and checks these quickly itself
    outcome: dict = {}

    def ask() -> None:
        try:
            client = ray._raylet.GcsClient(address=address)
            client.internal_kv_get(b"goenv-probe", namespace=None, timeout=timeout)
            outcome["ok"] = True
        except Exception as error:  # noqa: BLE001 (reported below with the address)
            outcome["error"] = error

    thread = threading.Thread(target=ask, name="goenv-ray-probe", daemon=True)
    thread.start()
    thread.join(timeout + 1.0)
    if not outcome.get("ok"):
        reason = outcome.get("error", f"no answer within {timeout:.0f} s")
        raise ConnectionError(f"cannot reach a Ray cluster at {address!r}: {reason}. Start one with "
                              "`ray start --head` and pass the address it prints, or leave address=None "
                              "for a local Ray on this machine.")


def connect(address: str | None, num_cpus: float | None = None, timeout: float = 25.0) -> bool:
    """Makes sure Ray is initialized; True when this call started it (the caller shuts it down).

    An already initialized Ray (a test session, a user's own ray.init) is used as is."""
    ray = require_ray()

    address = check_address(address)
    if address is not None:
        probe(address, timeout)  # a bad address is an error even inside a running session
    if ray.is_initialized():
        return False
    if address is None:
        ray.init(num_cpus=num_cpus, include_dashboard=False, log_to_driver=False,
                 configure_logging=False)
    else:
        try:
            ray.init(address=address, log_to_driver=False, configure_logging=False)
        except ConnectionError as error:
            raise ConnectionError(f"cannot join the Ray cluster at {address!r}: {error}") from error
    return True


def shutdown(started_here: bool) -> None:
    """Shuts Ray down if `connect` started it."""
    import ray

    if started_here and ray.is_initialized():
        ray.shutdown()


@contextlib.contextmanager
def interrupts_held():
    """Ctrl-C is held until the block is done, then delivered to the handler there was before
    (a KeyboardInterrupt, or `goenv train`'s "stop after this update"): a KeyboardInterrupt in
    the middle of Ray's shutdown leaves its processes (dashboard and runtime-env agents) running
    after the driver exits. Each Ctrl-C held is delivered, in order: two pressed in the block are
    `goenv train`'s "stop at once", as outside it. Signals reach only the main thread; elsewhere
    the block runs as it is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pressed: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: pressed.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        for _ in pressed:  # a handler that raises (the default's KeyboardInterrupt) ends the loop
            signal.raise_signal(signal.SIGINT)
