#!/usr/bin/python3
"""glintd's HTTP port against the hostile clients of issue 31, as figures.

Starts a glintd (its own store and ports), then, each on fresh loopback
connections:
  - a 256 MiB `Transfer-Encoding: chunked` infer body: how much glintd
    takes before it stops reading, what it answers, and its RSS peak;
  - bogus Content-Lengths (10^18, 2^64+5, -1): the answer and its time;
  - 80 connections that send half a body and stop: the time of a health
    request beside them, and when glintd closes them (--http_timeout).
Prints one line each. Nothing is asserted: runtime/server/http's tests
and //tests:e2e_http_load_test assert the behaviour.

  bazel build //runtime/server:glintd
  bench/http_edges.py bazel-bin/runtime/server/glintd
"""
import os
import socket
import subprocess
import sys
import tempfile
import time


def rss_mb(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS"):
                return int(line.split()[1]) // 1024
    return -1


def exchange(port, data, timeout=60):
    """Sends `data`, returns (seconds, first line of the reply)."""
    sock = socket.create_connection(("127.0.0.1", port))
    sock.settimeout(timeout)
    start = time.time()
    try:
        sock.sendall(data)
    except OSError:
        pass
    reply = b""
    try:
        while b"\r\n" not in reply:
            chunk = sock.recv(65536)
            if not chunk:
                break
            reply += chunk
    except OSError as e:
        reply += str(e).encode()
    sock.close()
    return time.time() - start, reply.split(b"\r\n")[0].decode(errors="replace")


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    work = tempfile.mkdtemp(prefix="glint-http-edges.")
    port_file = os.path.join(work, "http_port")
    daemon = subprocess.Popen(
        [sys.argv[1], "--listen=127.0.0.1:0", "--http_listen=127.0.0.1:0",
         f"--http_port_file={port_file}", f"--store_dir={work}/store",
         "--devices=sim", "--log_level=warn"])
    try:
        deadline = time.time() + 60
        while not os.path.exists(port_file) and time.time() < deadline:
            time.sleep(0.1)
        port = int(open(port_file).read())
        pid = daemon.pid
        print(f"glintd RSS at start: {rss_mb(pid)} MB")

        # A 256 MiB chunked body.
        sock = socket.create_connection(("127.0.0.1", port))
        sock.settimeout(60)
        sock.sendall(b"POST /v2/models/m/infer HTTP/1.1\r\nHost: x\r\n"
                     b"Transfer-Encoding: chunked\r\n\r\n")
        chunk = b"%x\r\n" % (1 << 20) + b" " * (1 << 20) + b"\r\n"
        start, sent, peak, stopped = time.time(), 0, 0, "read it all"
        try:
            for i in range(256):
                sock.sendall(chunk)
                sent += 1
                if i % 8 == 0:
                    peak = max(peak, rss_mb(pid))
            sock.sendall(b"0\r\n\r\n")
        except OSError as e:
            stopped = f"stopped reading ({e.strerror})"
        peak = max(peak, rss_mb(pid))
        try:
            answer = sock.recv(4096).split(b"\r\n")[0].decode() or "none"
        except OSError as e:
            answer = f"none ({e.strerror})"
        sock.close()
        print(f"256 MiB chunked body: {sent} MiB sent when glintd {stopped}; "
              f"answer: {answer}; RSS peak {peak} MB; "
              f"{time.time() - start:.2f} s")

        for length in ["1000000000000000000", "18446744073709551621", "-1"]:
            took, line = exchange(
                port, b"POST /v2/models/m/infer HTTP/1.1\r\nHost: x\r\n"
                b"Content-Length: " + length.encode() + b"\r\n\r\n")
            print(f"Content-Length: {length}: {line} in {took * 1000:.1f} ms")

        stalled = []
        for _ in range(80):
            s = socket.create_connection(("127.0.0.1", port))
            s.sendall(b"POST /v2/models/m/infer HTTP/1.1\r\nHost: x\r\n"
                      b"Content-Length: 100\r\n\r\n{\"inputs\": ")
            stalled.append(s)
        took, line = exchange(port, b"GET /v2/health/live HTTP/1.1\r\n"
                              b"Host: x\r\n\r\n")
        print(f"health beside 80 stalled bodies: {line} in "
              f"{took * 1000:.1f} ms")
        start, closed = time.time(), 0
        for s in stalled:
            s.settimeout(60)
            try:
                if s.recv(1) == b"":
                    closed += 1
            except OSError:
                closed += 1
            s.close()
        print(f"stalled connections closed by glintd: {closed} of 80, "
              f"{time.time() - start:.1f} s after the health answer")

        print(f"glintd RSS at the end: {rss_mb(pid)} MB")
    finally:
        daemon.terminate()
        daemon.wait(30)


if __name__ == "__main__":
    main()
