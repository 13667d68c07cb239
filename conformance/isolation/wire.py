"""The wire between the grader and the worker: plain data only, never a pickle.

One message is ``[u64 header length][header: UTF-8 JSON][raw buffer 0][raw buffer 1]...``. The header
holds a tree of tagged nodes; arrays travel as raw bytes with their dtype and shape (the
``numpy.save``/``load(allow_pickle=False)`` rule: a numeric dtype, native byte order, nothing that
runs code when read). Tags:

=======  =================================================  ==========================================
tag      node                                               decoded as
=======  =================================================  ==========================================
``v``    ``["v", json scalar]`` (None, bool, int, float,   the scalar
         str)
``a``    ``["a", buffer index, dtype str, shape]``          a writable ``numpy.ndarray`` (a copy)
``g``    ``["g", buffer index, dtype str]``                 a numpy scalar (``numpy.float32(0.5)``)
``l``    ``["l", [nodes]]``                                 list
``t``    ``["t", [nodes]]``                                 tuple
``d``    ``["d", [[str key, node], ...]]``                  dict
``m``    ``["m", handle, [model parts]]``                   a model living in the worker (``proxy``)
``o``    ``["o", module, qualname, shape or None, flags]``  ``Foreign``: a value of any other type,
                                                            described, never transported
=======  =================================================  ==========================================

A value of the candidate's own classes never crosses: it becomes a ``Foreign`` description, so the
suite's boundary rejects it with the same message as in-process ("returned torch.Tensor ..."). An
``ndarray`` subclass crosses as the plain ndarray of its bytes: its overridden comparisons stay behind.
Everything read is checked (dtype allow-list, sizes, depth) and raises ``WireError`` otherwise.
"""

from __future__ import annotations

import itertools
import json
import math
import mmap
import os
import select
import struct
import sys
import time
from typing import Any

import numpy as np

HEADER = struct.Struct("<Q")
MAX_DEPTH = 32
MAX_NODES = 200_000
MAX_HEADER_BYTES = 64 * 2**20
SMALL = 64 * 2**10  # buffers below this travel in the header's write
REUSE = SMALL  # a message's buffers of this size and more are read into one of the channel's reusable blocks
BLOCKS = 4  # blocks a channel keeps
# A new block is anonymous memory with its pages made at once (Linux MAP_POPULATE: 256 MB in 0.15-0.25 s,
# where faulting them in as the pipe's bytes arrive took 0.37-0.47 s; huge pages 0.07-1 s, as compaction goes).
_NEW_BLOCK = mmap.MAP_PRIVATE | getattr(mmap, "MAP_POPULATE", 0)  # fileno -1 adds MAP_ANONYMOUS
DTYPE_KINDS = "biufc"  # bool, signed, unsigned, float, complex: no object, void, datetime, string


class WireError(Exception):
    """A message that is not well-formed plain data: the other side is broken or hostile."""


class ChannelClosed(WireError):
    """The other end closed its pipe (the worker exited or was killed)."""


class ChannelTimeout(WireError):
    """No complete message before the deadline."""


class Foreign:
    """A value that could not cross: its type's name (and shape, if it had one) stand in for it.

    Subclasses are made per type (``foreign_type``) so that ``describe`` in ``candidate.py`` prints
    the original ``module.qualname`` and the "convert with tensor.detach()..." hint still applies.
    """

    def __init__(self, shape):
        self.shape = None if shape is None else tuple(shape)

    def __repr__(self) -> str:
        return f"<{type(self).__module__}.{type(self).__qualname__} that stayed in the worker>"


def _refuse(self, *args, **kwargs):
    raise TypeError(f"{self!r}: only a description crossed the boundary")


_FOREIGN_TYPES: dict[tuple, type] = {}


def foreign_type(module: str, qualname: str, convertible: bool) -> type:
    key = (module, qualname, convertible)
    if key not in _FOREIGN_TYPES:
        attrs = {"__module__": module, "__qualname__": qualname}
        if convertible:  # it had .detach() or __array__: the boundary's hint says how to convert
            attrs.update(detach=_refuse, __array__=_refuse)
        _FOREIGN_TYPES[key] = type(qualname.rsplit(".", 1)[-1], (Foreign,), attrs)
    return _FOREIGN_TYPES[key]


# -- encoding ------------------------------------------------------------------------------------
def encode(value: Any, model_handle=None) -> tuple[bytes, list[memoryview]]:
    """(header bytes, buffers) for ``value``. ``model_handle(obj)`` -> (handle, parts) or None names
    objects that stay in the worker as models (the worker's side passes it; the grader's does not)."""
    buffers: list[memoryview] = []
    tree = _encode(value, buffers, model_handle, 0)
    return json.dumps(tree, allow_nan=True, separators=(",", ":")).encode(), buffers


def _encode(value, buffers, model_handle, depth):
    if depth > MAX_DEPTH:
        return _foreign(value, note="nested too deeply")
    if value is None or isinstance(value, bool | str) or type(value) in (int, float):
        return ["v", value]
    if isinstance(value, np.ndarray):
        return _encode_array(value, buffers)
    if isinstance(value, np.generic) and np.dtype(type(value)).kind in DTYPE_KINDS:
        array = np.asarray(value)
        buffers.append(memoryview(np.ascontiguousarray(array).reshape(-1).view(np.uint8)))
        return ["g", len(buffers) - 1, array.dtype.str]
    if type(value) in (list, tuple):
        return ["l" if type(value) is list else "t", [_encode(v, buffers, model_handle, depth + 1) for v in value]]
    if type(value) is dict:
        if not all(type(k) is str for k in value):
            return ["o", "builtins", "dict (with keys that are not str)", None, 0]
        return ["d", [[k, _encode(v, buffers, model_handle, depth + 1)] for k, v in value.items()]]
    handle = model_handle(value) if model_handle else None
    if handle is not None:
        return ["m", *handle]
    return _foreign(value)


def _encode_array(value: np.ndarray, buffers) -> list:
    plain = np.ndarray.view(value, np.ndarray)  # a subclass's overrides stay behind
    if plain.dtype.kind not in DTYPE_KINDS or plain.dtype.hasobject:
        return _foreign(value, note=f"dtype {plain.dtype}")
    plain = np.ascontiguousarray(plain)
    if plain.dtype.byteorder == (">" if np.little_endian else "<"):
        plain = plain.astype(plain.dtype.newbyteorder("="))
    buffers.append(memoryview(plain.reshape(-1).view(np.uint8)))
    return ["a", len(buffers) - 1, plain.dtype.str, list(plain.shape)]


def _foreign(value, note: str = "") -> list:
    kind = type(value)
    shape = getattr(value, "shape", None) if not isinstance(value, type) else None
    try:
        shape = [int(n) for n in shape] if shape is not None else None
    except Exception:
        shape = None
    convertible = 1 if (hasattr(value, "detach") or hasattr(value, "__array__")) else 0
    qualname = str(getattr(kind, "__qualname__", "object")) + (f" ({note})" if note else "")
    return ["o", str(getattr(kind, "__module__", "?")), qualname, shape, convertible]


# -- decoding ------------------------------------------------------------------------------------
def decode(header: bytes | list, buffers: list, make_model=None) -> Any:
    """The value ``header`` (bytes, or its parsed tree) and ``buffers`` describe; ``make_model(handle,
    parts)`` builds model stand-ins (the grader's side); without it a model node is refused."""
    tree = parse_header(header) if isinstance(header, bytes | bytearray) else header
    counter = [0]
    return _decode(tree, buffers, make_model, 0, counter)


def _decode(node, buffers, make_model, depth, counter):
    counter[0] += 1
    if depth > MAX_DEPTH or counter[0] > MAX_NODES:
        raise WireError("value nested too deeply or too large")
    if not isinstance(node, list) or not node or not isinstance(node[0], str):
        raise WireError(f"malformed node {str(node)[:80]}")
    tag, rest = node[0], node[1:]
    if tag == "v" and len(rest) == 1 and (rest[0] is None or isinstance(rest[0], bool | int | float | str)):
        return rest[0]
    if tag in ("l", "t") and len(rest) == 1 and isinstance(rest[0], list):
        items = [_decode(v, buffers, make_model, depth + 1, counter) for v in rest[0]]
        return items if tag == "l" else tuple(items)
    if tag == "d" and len(rest) == 1 and isinstance(rest[0], list):
        return {_key(pair): _decode(pair[1], buffers, make_model, depth + 1, counter) for pair in rest[0]}
    if tag == "a" and len(rest) == 3:
        return _array(buffers, rest[0], rest[1], rest[2])
    if tag == "g" and len(rest) == 2:
        return _array(buffers, rest[0], rest[1], [])[()]
    if tag == "m" and len(rest) == 2 and make_model is not None:
        handle, parts = rest
        if not isinstance(handle, int) or not isinstance(parts, list) or not all(isinstance(p, str) for p in parts):
            raise WireError("malformed model handle")
        return make_model(handle, parts)
    if tag == "o" and len(rest) == 4:
        module, qualname, shape, convertible = rest
        if not isinstance(module, str) or not isinstance(qualname, str):
            raise WireError("malformed foreign value")
        if shape is not None and not (isinstance(shape, list) and all(isinstance(n, int) for n in shape)):
            shape = None
        return foreign_type(module[:200], qualname[:200], bool(convertible))(shape)
    raise WireError(f"unknown or malformed node tag {tag!r}")


def _key(pair) -> str:
    if not isinstance(pair, list) or len(pair) != 2 or not isinstance(pair[0], str):
        raise WireError("malformed dict entry")
    return pair[0]


def _array(buffers, index, dtype_text, shape) -> np.ndarray:
    dtype = array_dtype(dtype_text)
    if not isinstance(index, int) or not 0 <= index < len(buffers):
        raise WireError(f"array refers to missing buffer {index!r}")
    if not isinstance(shape, list) or not all(isinstance(n, int) and n >= 0 for n in shape):
        raise WireError(f"bad array shape {shape!r}")
    buffer = buffers[index]
    if math.prod(shape) * dtype.itemsize != len(buffer):
        raise WireError(f"array of shape {shape} and dtype {dtype} does not fill its {len(buffer)} bytes")
    return np.frombuffer(buffer, dtype=dtype).reshape(shape)


def array_dtype(text) -> np.dtype:
    if not isinstance(text, str) or len(text) > 8:
        raise WireError(f"bad dtype {text!r}")
    try:
        dtype = np.dtype(text)
    except TypeError:
        raise WireError(f"bad dtype {text!r}") from None
    native = ("=", "|", "<" if np.little_endian else ">")
    if dtype.kind not in DTYPE_KINDS or dtype.hasobject or dtype.byteorder not in native:
        raise WireError(f"dtype {text!r} may not cross the boundary (numeric, native byte order only)")
    return dtype


def parse_header(header: bytes) -> Any:
    try:
        return json.loads(header)
    except ValueError as exc:
        raise WireError(f"header is not JSON: {exc}") from None


def buffer_sizes(tree) -> list[int]:
    """The byte size of each buffer a header (its parsed tree) announces, read before the buffers arrive."""
    sizes: dict[int, int] = {}
    _collect_sizes(tree, sizes, 0)
    if sorted(sizes) != list(range(len(sizes))):
        raise WireError("buffers are not numbered 0..n-1")
    return [sizes[i] for i in range(len(sizes))]


def _collect_sizes(node, sizes, depth):
    if depth > MAX_DEPTH or not isinstance(node, list) or not node:
        raise WireError("malformed header")
    tag = node[0]
    if tag in ("a", "g"):
        index, dtype_text = node[1], node[2]
        shape = node[3] if tag == "a" else []
        if not isinstance(shape, list) or not all(isinstance(n, int) and n >= 0 for n in shape):
            raise WireError(f"bad array shape {shape!r}")
        if not isinstance(index, int) or index in sizes or index < 0:
            raise WireError("bad buffer index")
        sizes[index] = math.prod(shape) * array_dtype(dtype_text).itemsize
    elif tag in ("l", "t") and len(node) == 2 and isinstance(node[1], list):
        for child in node[1]:
            _collect_sizes(child, sizes, depth + 1)
    elif tag == "d" and len(node) == 2 and isinstance(node[1], list):
        for pair in node[1]:
            _collect_sizes(pair[1] if isinstance(pair, list) and len(pair) == 2 else None, sizes, depth + 1)


# -- the pipe ------------------------------------------------------------------------------------
class Channel:
    """One direction-pair of pipes, read and written with deadlines (``time.monotonic`` seconds)."""

    def __init__(self, read_fd: int, write_fd: int, *, max_bytes: int = 2**31):
        self.read_fd, self.write_fd, self.max_bytes = read_fd, write_fd, max_bytes
        self._blocks: list[mmap.mmap] = []  # see _read_buffers
        for fd in (read_fd, write_fd):
            os.set_blocking(fd, False)
            _grow_pipe(fd)

    def send(self, value: Any, *, deadline: float | None = None, model_handle=None) -> None:
        """One message; small buffers go out with the header in one write (a call's arrays are small)."""
        header, buffers = encode(value, model_handle)
        pending = [bytearray(HEADER.pack(len(header)) + header)]  # the last is always a bytearray
        for buffer in buffers:
            padding = bytes(padded(len(buffer)) - len(buffer))  # every array starts 16-byte aligned
            if len(buffer) < SMALL and len(pending[-1]) < SMALL:
                pending[-1] += buffer  # in place: joining bytes anew was quadratic in a message's arrays
                pending[-1] += padding
            else:
                pending += [buffer, bytearray(padding)]
        for chunk in pending:
            self._write(chunk, deadline)

    def receive(self, *, deadline: float | None = None, make_model=None) -> Any:
        """One message; its buffers are read as one block and sliced (writable views of this process's memory)."""
        (length,) = HEADER.unpack(self._read(HEADER.size, deadline))
        if length > MAX_HEADER_BYTES:
            raise WireError(f"header of {length} bytes announced (at most {MAX_HEADER_BYTES})")
        tree = parse_header(self._read(length, deadline))
        try:
            sizes = buffer_sizes(tree)
        except (ValueError, TypeError, KeyError, IndexError) as exc:
            raise WireError(f"malformed header: {exc}") from None
        if sum(sizes) > self.max_bytes:
            raise WireError(f"message of {sum(sizes)} bytes announced (at most {self.max_bytes})")
        block = self._read_buffers(sum(map(padded, sizes)), deadline)
        starts = [0, *itertools.accumulate(map(padded, sizes))]
        return decode(tree, [block[start:start + size] for start, size in zip(starts, sizes, strict=False)], make_model)

    def _wait(self, fd: int, event: int, deadline: float | None) -> None:
        poller = select.poll()
        poller.register(fd, event)
        while True:
            timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
            if poller.poll(None if timeout is None else int(timeout * 1000) + 1):
                return
            if deadline is not None and time.monotonic() >= deadline:
                raise ChannelTimeout("no answer before the deadline")

    def _read_buffers(self, size: int, deadline: float | None) -> memoryview:
        """A message's buffers. Large ones land in a block of memory this channel keeps and reuses once
        nothing decoded from it is alive (its reference count says so exactly): fresh memory costs a page
        fault and a zero-fill per page, as much as the copy itself, and on a virtual machine far more (the
        base-size weights, 250 MB: 0.25 s, up to 1 s with huge pages, against 0.03 s reused). Blocks still in
        use (an answer the checks keep) are left to their holders; the channel keeps the ``BLOCKS`` largest."""
        if size < REUSE:
            return memoryview(self._read(size, deadline))
        index = self._free_block(size)
        if index is None:
            block = mmap.mmap(-1, size, flags=_NEW_BLOCK)
            self._blocks = sorted([*self._blocks, block], key=len)[-BLOCKS:]
        else:
            block = self._blocks[index]
        view = memoryview(block)[:size]
        self._read_into(view, deadline)
        return view

    def _free_block(self, size: int) -> int | None:
        """The index of the smallest kept block of ``size`` bytes or more that nothing else refers to."""
        for index in range(len(self._blocks)):  # smallest first
            if len(self._blocks[index]) >= size and sys.getrefcount(self._blocks[index]) <= 2:  # the list, the argument
                return index
        return None

    def _read(self, size: int, deadline: float | None) -> bytearray:
        """Exactly ``size`` bytes: read while data is there, wait (poll) only when the pipe is empty."""
        out = bytearray(size)
        self._read_into(memoryview(out), deadline)
        return out

    def _read_into(self, view: memoryview, deadline: float | None) -> None:
        size, done = len(view), 0
        while done < size:
            try:
                n = os.readv(self.read_fd, [view[done:]])
            except BlockingIOError:
                self._wait(self.read_fd, select.POLLIN, deadline)
                continue
            if n == 0:
                raise ChannelClosed("the other end closed the pipe")
            done += n

    def _write(self, data, deadline: float | None) -> None:
        view, done = memoryview(data).cast("B"), 0
        while done < len(view):
            try:
                done += os.write(self.write_fd, view[done:done + 2**20])
            except BlockingIOError:
                self._wait(self.write_fd, select.POLLOUT, deadline)
            except BrokenPipeError:
                raise ChannelClosed("the other end closed the pipe") from None

    def close(self) -> None:
        for fd in (self.read_fd, self.write_fd):
            try:
                os.close(fd)
            except OSError:
                pass


def padded(size: int) -> int:
    return -(-size // 16) * 16


def _grow_pipe(fd: int) -> None:
    """1 MiB pipe buffers (Linux F_SETPIPE_SZ): fewer wake-ups for the base-size weights."""
    import fcntl

    try:
        fcntl.fcntl(fd, 1031, 2**20)  # F_SETPIPE_SZ
    except OSError:
        pass
