"""Boot script for metacog.benchmarks.sandbox: runs in the child process only.

Installs the socket guard, puts METACOG_SANDBOX_PATH folders on sys.path,
then runs the target script as __main__. Not imported by the package.
"""

import os
import runpy
import sys


def _blocked(*args, **kwargs):
    raise PermissionError("network access is disabled in the metacog sandbox")


def _guard_sockets() -> None:
    import socket

    import _socket

    class _NoSocket:
        def __init__(self, *args, **kwargs):
            _blocked()

    for mod in (socket, _socket):
        mod.socket = _NoSocket
    socket.SocketType = _NoSocket
    for name in ("create_connection", "create_server", "getaddrinfo", "gethostbyname",
                 "gethostbyname_ex", "gethostbyaddr", "socketpair", "fromfd"):
        if hasattr(socket, name):
            setattr(socket, name, _blocked)
    for name in ("getaddrinfo", "gethostbyname", "gethostbyname_ex", "gethostbyaddr", "socketpair"):
        if hasattr(_socket, name):
            setattr(_socket, name, _blocked)


def main() -> None:
    if len(sys.argv) < 2:
        raise SystemExit("usage: _sandbox_boot.py SCRIPT [ARGS...]")
    for folder in filter(None, os.environ.get("METACOG_SANDBOX_PATH", "").split(os.pathsep)):
        sys.path.insert(0, folder)
    sys.path.insert(0, os.getcwd())
    _guard_sockets()
    script = sys.argv[1]
    sys.argv = sys.argv[1:]
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    main()
