"""Reading a BPF ring buffer map from user space, as the kernel lays it out (Linux v6.18,
kernel/bpf/ringbuf.c): page 0 holds the consumer position (ours to write), page 1 the producer
position (read-only); the data follows, mapped twice in a row so a record that wraps reads as
one piece. Each record starts with an 8-byte header: its length with a busy and a discard bit,
and a page offset; records are 8-byte aligned."""

from __future__ import annotations

import mmap
import select
import struct
from collections.abc import Iterator

BUSY, DISCARD = 1 << 31, 1 << 30
HEADER = 8


class RingBuffer:
    def __init__(self, map_fd: int, size: int) -> None:
        self.size = size
        page = mmap.PAGESIZE
        self._consumer = mmap.mmap(map_fd, page, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        try:
            self._producer = mmap.mmap(
                map_fd, page + 2 * size, mmap.MAP_SHARED, mmap.PROT_READ, offset=page
            )
        except BaseException:
            self._consumer.close()
            raise
        self._page = page
        self._poll = select.poll()
        self._poll.register(map_fd, select.POLLIN)

    def close(self) -> None:
        self._producer.close()
        self._consumer.close()

    def wait(self, seconds: float) -> None:
        """Until data may be there, or `seconds`."""
        self._poll.poll(max(0, int(seconds * 1000)))

    def drain(self) -> Iterator[bytes]:
        """Each record produced and not yet consumed, oldest first."""
        (consumer,) = struct.unpack_from("<Q", self._consumer, 0)
        while True:
            (producer,) = struct.unpack_from("<Q", self._producer, 0)
            if consumer >= producer:
                return
            at = self._page + (consumer & (self.size - 1))
            (length,) = struct.unpack_from("<I", self._producer, at)
            if length & BUSY:
                return  # being written: the next drain takes it
            size = length & ~(BUSY | DISCARD)
            record = None if length & DISCARD else self._producer[at + HEADER : at + HEADER + size]
            consumer += (size + HEADER + 7) & ~7
            struct.pack_into("<Q", self._consumer, 0, consumer)
            if record is not None:
                yield record
