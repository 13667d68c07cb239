"""The wire between the grader and the worker: plain data only, never a pickle.

One message, through the pipe, is ``[u64 header length][header: UTF-8 JSON][raw buffer 0][raw buffer 1]...``,
each buffer padded to 16 bytes. The header holds a tree of tagged nodes; arrays travel as raw bytes with their
dtype and shape (the ``numpy.save``/``load(allow_pickle=False)`` rule: a numeric dtype, native byte order,
nothing that runs code when read). Tags:

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

HEADER = struct.Struct("<Q")  # header length
MAX_DEPTH = 32
MAX_NODES = 200_000
MAX_HEADER_BYTES = 64 * 2**20
READ_STEP = 2**20  # what a read of unmapped bytes allocates before they arrive
SMALL = 64 * 2**10  # buffers below this travel in the header's write
REUSE = SMALL  # a message's buffers of this size and more are read into one of the channel's reusable blocks
BLOCKS = 4  # blocks a channel keeps
# A new block is anonymous memory with its pages made at once (Linux MAP_POPULATE): faster than faulting them in
# one by one as the pipe's bytes arrive. Only up to POPULATED: above, a size merely announced would be memory
# taken before a byte of it arrived; larger blocks get their pages as the bytes come.
_NEW_BLOCK = mmap.MAP_PRIVATE | getattr(mmap, "MAP_POPULATE", 0)  # fileno -1 adds MAP_ANONYMOUS
_NEW_LARGE_BLOCK = mmap.MAP_PRIVATE
POPULATED = 64 * 2**20
DTYPE_KINDS = "biufc"  # bool, signed, unsigned, float, complex: no object, void, datetime, string
JSON_SCALARS = (bool, int, float, str)  # what json.loads makes of a scalar (and None)


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
    return _to_json(tree).encode(), buffers


_to_json = json.JSONEncoder(allow_nan=True, separators=(",", ":")).encode  # made once: json.dumps makes one a call


def _encode(value, buffers, model_handle, depth):
    # The exact types come first, the common ones first of all (a call's arguments: arrays, dicts of arrays).
    kind = type(value)
    if depth > MAX_DEPTH:
        return _foreign(value, note="nested too deeply")
    if kind is np.ndarray:
        return _encode_array(value, buffers)
    if value is None or kind in JSON_SCALARS:
        return ["v", value]
    if kind is dict:
        if not all(type(k) is str for k in value):
            return ["o", "builtins", "dict (with keys that are not str)", None, 0]
        return ["d", [[k, _encode(v, buffers, model_handle, depth + 1)] for k, v in value.items()]]
    if kind is list or kind is tuple:
        return ["l" if kind is list else "t", [_encode(v, buffers, model_handle, depth + 1) for v in value]]
    if isinstance(value, str):
        return ["v", value]
    if isinstance(value, np.ndarray):
        return _encode_array(value, buffers)
    if isinstance(value, np.generic) and np.dtype(type(value)).kind in DTYPE_KINDS:
        array = np.asarray(value)
        buffers.append(memoryview(np.ascontiguousarray(array).reshape(-1).view(np.uint8)))
        return ["g", len(buffers) - 1, array.dtype.str]
    handle = model_handle(value) if model_handle else None
    if handle is not None:
        return ["m", *handle]
    return _foreign(value)


# The dtypes an array is sent in as it is (DTYPE_KINDS, native byte order), and their header text.
_SENDABLE = {dtype: dtype.str for dtype in map(np.dtype, np.typecodes["All"])
             if dtype.kind in DTYPE_KINDS and dtype.isnative}


def _encode_array(value: np.ndarray, buffers) -> list:
    text = _SENDABLE.get(value.dtype)
    if text is not None and type(value) is np.ndarray and value.flags.c_contiguous and value.size:
        buffers.append(memoryview(value).cast("B"))  # the common case: its bytes as they are (a weight dict
        return ["a", len(buffers) - 1, text, list(value.shape)]  # has dozens of these)
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
    if type(node) is not list or not node:
        raise WireError(f"malformed node {str(node)[:80]}")
    tag, size = node[0], len(node)
    if tag == "a" and size == 4:  # the common tags first: arrays, scalars, dicts
        return _array(buffers, node[1], node[2], node[3])
    if tag == "v" and size == 2 and (node[1] is None or type(node[1]) in JSON_SCALARS):
        return node[1]
    if tag == "d" and size == 2 and type(node[1]) is list:
        return {_key(pair): _decode(pair[1], buffers, make_model, depth + 1, counter) for pair in node[1]}
    if tag in ("l", "t") and size == 2 and type(node[1]) is list:
        items = [_decode(v, buffers, make_model, depth + 1, counter) for v in node[1]]
        return items if tag == "l" else tuple(items)
    if tag == "g" and size == 3:
        return _array(buffers, node[1], node[2], [])[()]
    if tag == "m" and size == 3 and make_model is not None:
        handle, parts = node[1], node[2]
        if not isinstance(handle, int) or not isinstance(parts, list) or not all(isinstance(p, str) for p in parts):
            raise WireError("malformed model handle")
        return make_model(handle, parts)
    if tag == "o" and size == 5:
        module, qualname, shape, convertible = node[1:]
        if not isinstance(module, str) or not isinstance(qualname, str):
            raise WireError("malformed foreign value")
        if shape is not None and not (isinstance(shape, list) and all(isinstance(n, int) for n in shape)):
            shape = None
        return foreign_type(module[:200], qualname[:200], bool(convertible))(shape)
    raise WireError(f"unknown or malformed node tag {str(tag)[:80]!r}")


def _key(pair) -> str:
    if type(pair) is not list or len(pair) != 2 or type(pair[0]) is not str:
        raise WireError("malformed dict entry")
    return pair[0]


def _array(buffers, index, dtype_text, shape) -> np.ndarray:
    dtype = array_dtype(dtype_text)
    if type(index) is not int or not 0 <= index < len(buffers):
        raise WireError(f"array refers to missing buffer {index!r}")
    check_shape(shape)
    buffer = buffers[index]
    if math.prod(shape) * dtype.itemsize != len(buffer):
        raise WireError(f"array of shape {shape} and dtype {dtype} does not fill its {len(buffer)} bytes")
    return np.ndarray(shape, dtype, buffer)  # a view of the buffer, as np.frombuffer(...).reshape makes it


def check_shape(shape) -> None:
    if type(shape) is not list or not all(type(n) is int and n >= 0 for n in shape):
        raise WireError(f"bad array shape {shape!r}")


_ALLOWED_DTYPES: dict[str, np.dtype] = {}  # dtype texts already accepted (a few: '<f4', '<i8', '|b1', ...)


def array_dtype(text) -> np.dtype:
    known = _ALLOWED_DTYPES.get(text) if type(text) is str else None
    if known is not None:
        return known
    if not isinstance(text, str) or len(text) > 8:
        raise WireError(f"bad dtype {text!r}")
    try:
        dtype = np.dtype(text)
    except TypeError:
        raise WireError(f"bad dtype {text!r}") from None
    native = ("=", "|", "<" if np.little_endian else ">")
    if dtype.kind not in DTYPE_KINDS or dtype.hasobject or dtype.byteorder not in native:
        raise WireError(f"dtype {text!r} may not cross the boundary (numeric, native byte order only)")
    if len(_ALLOWED_DTYPES) < 64:
        _ALLOWED_DTYPES[text] = dtype
    return dtype


def parse_header(header: bytes) -> Any:
    try:
        return json.loads(header)
    except ValueError as exc:
        raise WireError(f"header is not JSON: {exc}") from None
    except RecursionError:  # nested deeper than the interpreter's stack: malformed as surely as bad JSON
        raise WireError("header nested too deep to parse") from None


def buffer_sizes(tree) -> list[int]:
    """The byte size of each buffer a header (its parsed tree) announces, read before the buffers arrive."""
    sizes: dict[int, int] = {}
    _collect_sizes(tree, sizes, 0)
    if sorted(sizes) != list(range(len(sizes))):
        raise WireError("buffers are not numbered 0..n-1")
    return [sizes[i] for i in range(len(sizes))]


def _collect_sizes(node, sizes, depth):
    if depth > MAX_DEPTH or type(node) is not list or not node:
        raise WireError("malformed header")
    tag = node[0]
    if tag == "a" or tag == "g":
        index, dtype_text = node[1], node[2]
        shape = node[3] if tag == "a" else []
        check_shape(shape)
        if type(index) is not int or index in sizes or index < 0:
            raise WireError("bad buffer index")
        sizes[index] = math.prod(shape) * array_dtype(dtype_text).itemsize
    elif tag == "d" and len(node) == 2 and type(node[1]) is list:
        for pair in node[1]:
            _collect_sizes(pair[1] if type(pair) is list and len(pair) == 2 else None, sizes, depth + 1)
    elif (tag == "l" or tag == "t") and len(node) == 2 and type(node[1]) is list:
        for child in node[1]:
            _collect_sizes(child, sizes, depth + 1)


# -- the pipe ------------------------------------------------------------------------------------
class Channel:
    """One direction-pair of pipes, read and written with deadlines (``time.monotonic`` seconds)."""

    def __init__(self, read_fd: int, write_fd: int, *, max_bytes: int = 2**31):
        self.read_fd, self.write_fd, self.max_bytes = read_fd, write_fd, max_bytes
        self._blocks: list[mmap.mmap] = []  # see _block_view
        for fd in (read_fd, write_fd):
            os.set_blocking(fd, False)
            _grow_pipe(fd)

    def write_bytes(self, data: bytes, *, deadline: float | None = None) -> None:
        """Raw bytes, outside the message format (the worker's boot message: ``supervisor.boot_message``)."""
        self._write(data, deadline)

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
        starts = [0, *itertools.accumulate(map(padded, sizes))]
        block = self._read_buffers(starts[-1], deadline)
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
        """A message's buffers, read from the pipe (into a kept block when large: ``_block_view``)."""
        if size < REUSE:
            return memoryview(self._read(size, deadline))
        view = self._block_view(size)
        self._read_into(view, deadline)
        return view

    def _block_view(self, size: int) -> memoryview:
        """Memory for a message's large buffers: a block this channel keeps and reuses once nothing decoded
        from it is alive (its reference count says so exactly): fresh memory costs a page fault and a
        zero-fill per page, as much as the copy itself, and on a virtual machine far more. Blocks still in use
        (an answer the checks keep) are left to their holders; the channel keeps the ``BLOCKS`` largest."""
        index = self._free_block(size)
        if index is None:
            block = mmap.mmap(-1, size, flags=_NEW_BLOCK if size <= POPULATED else _NEW_LARGE_BLOCK)
            self._blocks = sorted([*self._blocks, block], key=len)[-BLOCKS:]
        else:
            block = self._blocks[index]
        return memoryview(block)[:size]

    def _free_block(self, size: int) -> int | None:
        """The index of the smallest kept block of ``size`` bytes or more that nothing else refers to."""
        for index in range(len(self._blocks)):  # smallest first
            if len(self._blocks[index]) >= size and sys.getrefcount(self._blocks[index]) <= 2:  # the list, the argument
                return index
        return None

    def _read(self, size: int, deadline: float | None) -> bytearray:
        """Exactly ``size`` bytes: read while data is there, wait (poll) only when the pipe is empty. Memory grows
        with what arrives, a step at a time: a size announced and never sent costs nothing."""
        out = bytearray()
        while len(out) < size:
            step = bytearray(min(size - len(out), READ_STEP))
            self._read_into(memoryview(step), deadline)
            out += step
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
