"""Local servers that never answer properly, for the hang tests (127.0.0.1 only, stdlib only).

- :class:`SilentServer`: accepts connections, reads the request, never answers;
- :class:`DripServer`: answers ``200`` headers promising a body, then sends one byte every ``every`` s;
- :class:`FullBacklog`: a listener that never accepts, its backlog filled, so connects hang;
- :class:`DropServer`: reads the request and closes the connection without a word (a proxy whose
  upstream died, a crashing server: httpx's "Server disconnected without sending a response").
"""

from __future__ import annotations

import socket
import threading
import time


class _Base:
    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self.stop = threading.Event()
        self.connections = 0
        self._conns: list[socket.socket] = []

    def __enter__(self):
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        for c in self._conns:
            try:
                c.close()
            except OSError:
                pass
        self.sock.close()


class _Accepting(_Base):
    def __init__(self) -> None:
        super().__init__()
        self.sock.listen(64)
        self.sock.settimeout(0.1)
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except (TimeoutError, OSError):
                continue
            self.connections += 1
            self._conns.append(conn)
            threading.Thread(target=self.serve, args=(conn,), daemon=True).start()

    def serve(self, conn: socket.socket) -> None:  # pragma: no cover (overridden)
        raise NotImplementedError


class SilentServer(_Accepting):
    """Accepts and reads, never answers."""

    def serve(self, conn: socket.socket) -> None:
        conn.settimeout(0.2)
        while not self.stop.is_set():
            try:
                if not conn.recv(65536):
                    return
            except TimeoutError:
                continue
            except OSError:
                return


class DripServer(_Accepting):
    """Sends 200 headers for a 100 kB JSON body, then one byte every ``every`` seconds."""

    def __init__(self, every: float = 0.5) -> None:
        self.every = every
        super().__init__()

    def serve(self, conn: socket.socket) -> None:
        try:
            conn.settimeout(1.0)
            conn.recv(65536)
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n")
            while not self.stop.is_set():
                conn.sendall(b" ")
                time.sleep(self.every)
        except OSError:
            return


class FullBacklog(_Base):
    """Listens with a full backlog and never accepts: a client's connect hangs."""

    def __init__(self) -> None:
        super().__init__()
        self.sock.listen(0)
        for _ in range(4):
            s = socket.socket()
            s.setblocking(False)
            try:
                s.connect(("127.0.0.1", self.port))
            except BlockingIOError:
                pass
            self._conns.append(s)
        time.sleep(0.2)


class DropServer(_Accepting):
    """Reads a request, then closes the connection without answering; counts ``connections``."""

    def serve(self, conn: socket.socket) -> None:
        try:
            conn.settimeout(1.0)
            conn.recv(65536)
        except OSError:
            pass
        finally:
            conn.close()
