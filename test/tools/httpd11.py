#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Python's http.server speaking HTTP/1.1 (keep-alive; its default is
HTTP/1.0), one thread per connection, no access log.

    httpd11.py ADDRESS PORT DIRECTORY
"""
import functools
import http.server
import sys


class Handler(http.server.SimpleHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass


def main():
    addr, port, directory = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    handler = functools.partial(Handler, directory=directory)
    http.server.ThreadingHTTPServer((addr, port), handler).serve_forever()


if __name__ == "__main__":
    main()
