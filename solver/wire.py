"""Reading Kafka protocol bytes: big-endian fields, every failure named by its byte offset.

Shared by the consumer-protocol codec (:mod:`solver.consumer.protocol`) and the Kafka
Streams ``SubscriptionInfo`` codec (:mod:`solver.streams.subscription_info`).
"""

from __future__ import annotations

import struct
import uuid


class SubscriptionDecodeError(ValueError):
    """Bytes that do not follow the layout; the message starts with ``byte <offset>:``."""


class ByteReader:
    """Big-endian reads over ``data``; every failure names the byte offset and the field expected there."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def left(self) -> int:
        """Bytes not read yet."""
        return len(self.data) - self.pos

    def take(self, n: int, what: str) -> bytes:
        """The next ``n`` bytes (``what`` names the field in the error)."""
        if n < 0 or self.pos + n > len(self.data):
            raise SubscriptionDecodeError(
                f"byte {self.pos}: {what} needs {n} bytes, {len(self.data) - self.pos} left")
        b = self.data[self.pos:self.pos + n]
        self.pos += n
        return b

    def i8(self, what: str) -> int:
        return int(struct.unpack(">b", self.take(1, what))[0])

    def i16(self, what: str) -> int:
        return int(struct.unpack(">h", self.take(2, what))[0])

    def i32(self, what: str) -> int:
        return int(struct.unpack(">i", self.take(4, what))[0])

    def i64(self, what: str) -> int:
        return int(struct.unpack(">q", self.take(8, what))[0])

    def count(self, what: str, item_size: int = 1) -> int:
        """An int32 array length: non-negative, and no more items than the bytes left can hold."""
        at = self.pos
        n = self.i32(what)
        if n < 0:
            raise SubscriptionDecodeError(f"byte {at}: {what} has negative length {n}")
        if n * item_size > self.left():
            raise SubscriptionDecodeError(
                f"byte {at}: {what} has length {n}, more than the {self.left()} bytes left can hold")
        return n

    def uuid(self, what: str) -> str:
        return str(uuid.UUID(bytes=self.take(16, what)))

    def bytes32(self, what: str) -> bytes:
        return self.take(self.count(what), what)

    def utf8(self, raw: bytes, at: int, what: str) -> str:
        """``raw`` (read at byte ``at``) as UTF-8 text."""
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise SubscriptionDecodeError(
                f"byte {at + e.start}: {what} is not valid UTF-8 ({e.reason})") from None

    def text32(self, what: str) -> str:
        """int32 length + UTF-8 bytes."""
        raw = self.bytes32(what)
        return self.utf8(raw, self.pos - len(raw), what)

    def str16(self, what: str) -> str | None:
        """int16 length + UTF-8 bytes; a negative length is null."""
        n = self.i16(what)
        if n < 0:
            return None
        raw = self.take(n, what)
        return self.utf8(raw, self.pos - n, what)

    def task(self, what: str) -> str:
        s = self.i32(what)
        p = self.i32(what)
        return f"{s}_{p}"
