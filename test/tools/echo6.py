#!/usr/bin/env python3
"""TCP and UDP echo servers on "::" (both families), for the IPv6 and
dual-stack tests' peers.

Usage: echo6.py TCP_PORT [UDP_PORT]   (UDP_PORT: TCP_PORT when not given)

Prints "listening" once both are bound; echoes every TCP connection (a
thread each) and every datagram back to its sender, until killed.
"""
import socket
import socketserver
import sys
import threading


class Server(socketserver.ThreadingTCPServer):
    address_family = socket.AF_INET6
    allow_reuse_address = True
    daemon_threads = True


class Echo(socketserver.BaseRequestHandler):
    def handle(self):
        while True:
            d = self.request.recv(65536)
            if not d:
                return
            self.request.sendall(d)


tcp_port = int(sys.argv[1])
udp_port = int(sys.argv[2]) if len(sys.argv) > 2 else tcp_port
t = Server(("::", tcp_port), Echo)
threading.Thread(target=t.serve_forever, daemon=True).start()
u = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
u.bind(("::", udp_port))
print("listening", flush=True)
while True:
    d, a = u.recvfrom(65536)
    u.sendto(d, a)
