"""How many bytes a local client has not read yet from its TCP connection to the proxy (Linux).

A client on the same machine owns the other end of the connection, and the kernel lists every TCP
socket of the network namespace in ``/proc/net/tcp`` (``tcp6``) with its receive queue: the bytes that
arrived and that the program has not read. The group rules ask it of a connection that carried an
answer: bytes still queued there mean the client had not read that answer when it sent its next
call. Anything else (another machine, another OS, no such file) answers None: no evidence.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
import sys
from pathlib import Path

TABLES = {socket.AF_INET: Path("/proc/net/tcp"), socket.AF_INET6: Path("/proc/net/tcp6")}


def _hex_endpoint(family: int, host: str, port: int) -> str:
    """An address as ``/proc/net/tcp*`` prints it: the kernel's words of the address in hex, then the port."""
    packed = ipaddress.ip_address(host.split("%", 1)[0]).packed
    words = [packed[i : i + 4] for i in range(0, len(packed), 4)]
    text = "".join(f"{int.from_bytes(word, sys.byteorder):08X}" for word in words)  # printed in host order
    return f"{text}:{port:04X}"


def peer_unread(transport: asyncio.BaseTransport) -> int | None:
    """Bytes the client has not read from this connection, when its socket is on this machine; else None."""
    sock = transport.get_extra_info("socket")
    if sock is None or sock.fileno() < 0 or sock.family not in TABLES:
        return None
    try:
        ours, theirs = sock.getsockname(), sock.getpeername()
        if not ipaddress.ip_address(theirs[0].split("%", 1)[0]).is_loopback:
            return None
        local = _hex_endpoint(sock.family, theirs[0], theirs[1])  # the client's socket: its own address first
        remote = _hex_endpoint(sock.family, ours[0], ours[1])
        with TABLES[sock.family].open() as table:
            next(table, None)  # the header line
            for line in table:
                fields = line.split()
                if len(fields) > 4 and fields[1] == local and fields[2] == remote:
                    return int(fields[4].partition(":")[2], 16)
    except (OSError, ValueError):
        return None
    return None
