#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""banner_server.py ADDR PORT TEXT

A TCP server bound to ADDR:PORT (either family: ADDR decides) that sends
TEXT and a newline to every connection and closes it. Prints "listening"
once it listens. The sharing tests' server on one address.
"""
import socket
import sys

addr, port, text = sys.argv[1], int(sys.argv[2]), sys.argv[3].encode() + b"\n"
fam = socket.getaddrinfo(addr, port, type=socket.SOCK_STREAM)[0][0]
l = socket.socket(fam)
l.bind((addr, port))
l.listen(8)
print("listening", flush=True)
while True:
    c = l.accept()[0]
    c.sendall(text)
    c.close()
