"""A folder on a hung network mount, for the faults tests: a minimal FUSE server (raw
``/dev/fuse``, no library) that answers the kernel's INIT and the root's GETATTR, and never
answers a LOOKUP, as a stale sshfs or NFS mount behaves: a ``stat`` of anything under it never
returns. Needs root and ``/dev/fuse``.

    python tests/helpers/hungfs.py MOUNTPOINT     # until SIGTERM, which detaches the mount
"""

from __future__ import annotations

import ctypes
import os
import signal
import struct
import sys

INIT, GETATTR, LOOKUP, FORGET, INTERRUPT, BATCH_FORGET, DESTROY = 26, 3, 1, 2, 36, 42, 38


def main(mountpoint: str) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open("/dev/fuse", os.O_RDWR)
    options = f"fd={fd},rootmode=40000,user_id=0,group_id=0,allow_other".encode()
    if libc.mount(b"hungfs", mountpoint.encode(), b"fuse", 0, options) != 0:
        sys.exit(f"mount failed: {os.strerror(ctypes.get_errno())}")

    def detach(*_: object) -> None:
        libc.umount2(mountpoint.encode(), 2)  # MNT_DETACH: the requests stuck on it fail
        os._exit(0)

    signal.signal(signal.SIGTERM, detach)
    signal.signal(signal.SIGINT, detach)
    print("mounted", flush=True)

    def reply(unique: int, error: int = 0, body: bytes = b"") -> None:
        os.write(fd, struct.pack("<IiQ", 16 + len(body), error, unique) + body)

    folder = struct.pack("<QQQQQQIIIIIIIIII", 1, 0, 0, 0, 0, 0, 0, 0, 0, 0o40755, 2, 0, 0, 0, 4096, 0)
    while True:
        try:
            request = os.read(fd, 1 << 20)
        except OSError as exc:
            if exc.errno == 19:  # ENODEV: unmounted
                return
            continue
        _length, op, unique, node = struct.unpack_from("<IIQQ", request)
        if op == INIT:
            reply(unique, 0, struct.pack("<IIIIHHIIHHI", 7, 31, 0, 0, 16, 12, 65536, 1, 32, 0, 0) + b"\0" * 28)
        elif op == GETATTR and node == 1:
            reply(unique, 0, struct.pack("<QII", 1, 0, 0) + folder)
        elif op in (LOOKUP, FORGET, BATCH_FORGET, INTERRUPT):
            continue  # a lookup never answered; the others take no reply
        elif op == DESTROY:
            reply(unique)
            return
        else:
            reply(unique, -38)  # ENOSYS


if __name__ == "__main__":
    main(sys.argv[1])
