"""A loopback TCP forwarder a test can cut: what Prometheus sees when the server behind it stops
(connections refused, the target down, its series stale), without stopping a shared server."""

from __future__ import annotations

import contextlib
import socket
import threading
from types import TracebackType


class TCPProxy:
    def __init__(self, upstream: tuple[str, int]):
        self.upstream = upstream
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._accepting = threading.Thread(target=self._accept, name="tcp-proxy", daemon=True)

    @property
    def target(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> TCPProxy:
        self._accepting.start()
        return self

    def stop(self) -> None:
        """Refuse new connections and cut the open ones."""
        self._stopped.set()
        self._listener.close()
        with self._lock:
            for sock in self._open:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                sock.close()
            self._open.clear()
        self._accepting.join(timeout=5)

    def __enter__(self) -> TCPProxy:
        return self.start()

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()

    def _accept(self) -> None:
        while not self._stopped.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            try:
                server = socket.create_connection(self.upstream, timeout=10)
            except OSError:
                client.close()
                continue
            with self._lock:
                if self._stopped.is_set():
                    client.close()
                    server.close()
                    return
                self._open |= {client, server}
            for src, dst in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(src, dst), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while chunk := src.recv(65536):
                dst.sendall(chunk)
        except OSError:
            pass
        finally:
            for sock in (src, dst):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
