#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""hold_server.py ADDR PORT [RCVBUF]: a TCP listener that accepts every
connection and holds it without reading (its receive buffer fills, the
sender's window closes): the peer that keeps a preloaded program blocked in
send or recv. RCVBUF sets SO_RCVBUF on the listener (inherited by accepted
sockets). Prints "listening" once bound."""
import socket
import sys

lsock = socket.socket()
lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
if len(sys.argv) > 3:
    lsock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, int(sys.argv[3]))
lsock.bind((sys.argv[1], int(sys.argv[2])))
lsock.listen(64)
print("listening", flush=True)
held = []
while True:
    held.append(lsock.accept()[0])
