"""The HTTP server under abuse: idle connections that hold workers, a full queue, many scrapers at
once. Every client gets an answer; a full server says 503 at once and recovers by itself."""

from __future__ import annotations

import http.client
import socket
import threading
import time
from collections.abc import Iterable
from wsgiref.types import StartResponse, WSGIEnvironment

from monitor.http import serve


def _app(environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", "3")])
    return [b"ok\n"]


def _get(port: int) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
    try:
        conn.request("GET", "/")
        answer = conn.getresponse()
        return answer.status, answer.read()
    finally:
        conn.close()


def test_a_full_server_answers_503_at_once_and_recovers() -> None:
    server = serve(_app, "127.0.0.1", 0, workers=2, max_queued=2, connection_timeout=2)
    idle = []
    try:
        for _ in range(4):  # two hold the workers (they never send a request), two wait in the queue
            idle.append(socket.create_connection(("127.0.0.1", server.port)))
            time.sleep(0.2)  # accepted, and taken by a worker while one is free
        status, body = _get(server.port)
        assert (status, body) == (503, b"busy\n")

        # the idle connections are closed after connection_timeout; the server serves again
        deadline = time.monotonic() + 20
        while (status := _get(server.port)[0]) != 200 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert status == 200
        assert all(conn.recv(1) == b"" for conn in idle[:2])  # closed by the server
    finally:
        for conn in idle:
            conn.close()
        server.shutdown()


def test_two_hundred_concurrent_scrapers_are_all_answered() -> None:
    server = serve(_app, "127.0.0.1", 0)
    start = threading.Barrier(200)
    statuses: list[int] = []

    def scrape() -> None:
        start.wait()
        statuses.append(_get(server.port)[0])

    threads = [threading.Thread(target=scrape) for _ in range(200)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
    finally:
        server.shutdown()
    assert statuses == [200] * 200


def test_clients_trickling_their_request_cannot_hold_the_workers() -> None:
    # Each sends a byte every 0.3 s: no single read ever waits the 10 s idle timeout, so only a
    # deadline on the whole request frees the workers.
    server = serve(_app, "127.0.0.1", 0, workers=2, max_queued=2, connection_timeout=1.5)
    stop = threading.Event()
    cut_off: list[float] = []

    def trickle() -> None:
        with socket.create_connection(("127.0.0.1", server.port)) as conn:
            started = time.monotonic()
            try:
                for byte in b"GET / HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 1000:
                    if stop.is_set():
                        return
                    conn.sendall(bytes([byte]))
                    time.sleep(0.3)
                    conn.settimeout(0.01)
                    try:
                        if conn.recv(1) == b"":
                            break  # the server closed the connection
                    except TimeoutError:
                        pass
            except OSError:  # reset by the server
                pass
            cut_off.append(time.monotonic() - started)

    slow = [threading.Thread(target=trickle) for _ in range(2)]
    try:
        for thread in slow:
            thread.start()
        time.sleep(0.3)  # both hold a worker now
        started = time.monotonic()
        status = 503
        while status != 200 and time.monotonic() - started < 10:
            status = _get(server.port)[0]
        assert status == 200
        for thread in slow:
            thread.join(timeout=10)
        assert len(cut_off) == 2 and all(1.0 < t < 4.0 for t in cut_off), cut_off
    finally:
        stop.set()
        server.shutdown()
