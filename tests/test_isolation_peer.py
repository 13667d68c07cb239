"""Large messages straight between the two processes' memory, and the worker on the grader's CPU (peer.py)."""

import json
import os
import struct
import textwrap
import threading
import time

import numpy as np
import pytest

from conformance.boundary.isolation import peer, wire
from conformance.boundary.isolation.proxy import load_isolated
from conformance.boundary.isolation.wire import HEADER, OFFERED, PUSHED, Channel, WireError

BIG = (1024, 1024)  # 8 MB of float64: above wire.DIRECT_MIN


@pytest.fixture
def copies(monkeypatch):
    """Counts the direct copies (a dict of lists: 'write', 'read' -> whether each moved every byte)."""
    seen = {"write": [], "read": []}
    for name, kind in (("write_into", "write"), ("read_from", "read")):
        real = getattr(peer, name)

        def counted(pid, pieces, real=real, kind=kind):
            seen[kind].append(real(pid, pieces))
            return seen[kind][-1]

        monkeypatch.setattr(peer, name, counted)
    return seen


def channel_pair(*, direct=True):
    """(grader, worker) channels in this process; with ``direct`` the grader may reach this process's memory."""
    to_worker, to_grader = os.pipe(), os.pipe()
    grader, worker = Channel(to_grader[0], to_worker[1]), Channel(to_worker[0], to_grader[1])
    worker.worker_side = True
    if direct:
        grader.peer, worker.offer = os.getpid, True
    return grader, worker


def exchange(sender, receiver, value):
    """``value`` sent by one channel and received by the other (the handshakes need both running)."""
    received = []
    thread = threading.Thread(target=lambda: received.append(receiver.receive(deadline=time.monotonic() + 30)))
    thread.start()
    try:
        sender.send(value, deadline=time.monotonic() + 30)
        thread.join(30)
    finally:
        assert not thread.is_alive()
    (back,) = received
    return back


def big_value(seed):
    rng = np.random.default_rng(seed)
    return {"W": rng.standard_normal(BIG), "b": rng.standard_normal(3).astype(np.float32), "n": 7,
            "ids": np.arange(2**20, dtype=np.int64)}


def both_ways(channels, seeds):
    """A large request from the grader and a large answer from the worker arrive whole; the channels closed."""
    grader, worker = channels
    try:
        request, answer = big_value(seeds[0]), big_value(seeds[1])
        assert_same(exchange(grader, worker, request), request)
        assert_same(exchange(worker, grader, answer), answer)
    finally:
        grader.close()
        worker.close()


def assert_same(back, value):
    assert set(back) == set(value) and back["n"] == value["n"]
    for name in ("W", "b", "ids"):
        assert back[name].dtype == value[name].dtype and np.array_equal(back[name], value[name])
        assert back[name].flags.writeable and back[name].flags.aligned


@pytest.mark.skipif(not peer.direct_copies_possible(), reason="no process_vm_writev in this C library")
def test_large_messages_skip_the_pipe_both_ways(copies):
    both_ways(channel_pair(), seeds=(1, 2))
    assert copies == {"write": [True], "read": [True]}


def test_small_messages_and_channels_without_a_peer_use_the_pipe(copies):
    grader, worker = channel_pair()
    plain_grader, plain_worker = channel_pair(direct=False)
    try:
        assert exchange(grader, worker, {"x": np.ones(3)})["x"].tolist() == [1.0] * 3
        value = big_value(3)
        assert_same(exchange(plain_grader, plain_worker, value), value)
        assert_same(exchange(plain_worker, plain_grader, value), value)
    finally:
        for channel in (grader, worker, plain_grader, plain_worker):
            channel.close()
    assert copies == {"write": [], "read": []}


def test_where_the_kernel_refuses_the_bytes_go_through_the_pipe(monkeypatch):
    monkeypatch.setattr(peer, "write_into", lambda pid, pieces: False)
    monkeypatch.setattr(peer, "read_from", lambda pid, pieces: False)
    both_ways(channel_pair(), seeds=(4, 5))


def test_an_offered_address_that_is_not_mapped_is_read_from_the_pipe_instead(copies):
    """A hostile worker names an address outside its memory: the copy fails, the grader asks for the bytes."""
    grader, worker = channel_pair()
    payload = np.arange(2**20, dtype=np.float64)  # 8 MB
    header = json.dumps(["a", 0, "<f8", [2**20]]).encode()

    def lying_worker():
        os.write(worker.write_fd, HEADER.pack(len(header), OFFERED) + header + struct.pack("<IQ", 1, 4096))
        assert bytes(worker._read(1, time.monotonic() + 30)) == b"P"
        worker._write_padded([memoryview(payload).cast("B")], time.monotonic() + 30)

    thread = threading.Thread(target=lying_worker)
    thread.start()
    try:
        back = grader.receive(deadline=time.monotonic() + 30)
        thread.join(30)
    finally:
        grader.close()
        worker.close()
    assert np.array_equal(back, payload) and copies["read"] == [False]


@pytest.mark.parametrize("route", [PUSHED, OFFERED])
@pytest.mark.parametrize("case", ["the other side's route", "a small message"])
def test_each_side_refuses_the_route_it_does_not_expect(route, case):
    """Only the grader pushes and only the worker offers (the grader never names its memory to the worker), and
    only messages of ``DIRECT_MIN`` bytes or more skip the pipe."""
    grader, worker = channel_pair()
    if case == "a small message":
        receiver, sender, node = (worker, grader, ["v", 1]) if route == PUSHED else (grader, worker, ["v", 1])
    else:  # 8 MB announced, to the side that never accepts this route
        receiver, sender = (grader, worker) if route == PUSHED else (worker, grader)
        node = ["a", 0, "<f8", [2**20]]
    header = json.dumps(node).encode()
    try:
        os.write(sender.write_fd, HEADER.pack(len(header), route) + header)
        with pytest.raises(WireError, match=f"route {route}, which this side does not accept"):
            receiver.receive(deadline=time.monotonic() + 5)
    finally:
        grader.close()
        worker.close()


def test_a_grader_that_does_not_believe_the_worker_reads_offered_messages_from_the_pipe(copies):
    grader, worker = channel_pair()
    grader.peer = None  # its hello's pid was not the supervisor's child
    try:
        answer = big_value(6)
        assert_same(exchange(worker, grader, answer), answer)
    finally:
        grader.close()
        worker.close()
    assert copies == {"write": [], "read": []}


ECHO = '''
import ctypes
import numpy as np
from conformance import Conventions

if DUMPABLE_FLAG == 0:  # a worker that forbids others to read its memory (prctl PR_SET_DUMPABLE 0)
    ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)


class Adapter:
    conventions = Conventions(mask="keep", batch_first=True, dtype="float64", framework="numpy")

    def layer_norm(self, x, gamma, beta, eps):
        return x * 2.0


adapter = Adapter()
'''


@pytest.mark.parametrize("dumpable", [1, 0])
def test_a_worker_echoes_large_arrays_whether_or_not_its_memory_can_be_reached(tmp_path, copies, dumpable):
    path = tmp_path / "echo_adapter.py"
    path.write_text(textwrap.dedent(ECHO).replace("DUMPABLE_FLAG", str(dumpable)))
    candidate = load_isolated(str(path), timeout_s=30)
    try:
        x = np.random.default_rng(0).standard_normal((4, 512, 512))  # 8 MB each way
        assert np.array_equal(candidate.adapter.layer_norm(x, np.ones(512), np.zeros(512), 1e-6), x * 2.0)
    finally:
        candidate.adapter.close()
    if peer.direct_copies_possible() and dumpable:
        assert copies == {"write": [True], "read": [True]}
    # not dumpable: refused, unless the grader may trace any process (root's CAP_SYS_PTRACE); either way, right


def test_the_worker_pid_is_believed_only_for_a_child_of_its_supervisor(tmp_path):
    path = tmp_path / "echo_adapter.py"
    path.write_text(textwrap.dedent(ECHO).replace("DUMPABLE_FLAG", "1"))
    candidate = load_isolated(str(path), timeout_s=30)
    worker = candidate.adapter._worker
    try:
        if peer.direct_copies_possible():
            assert worker.channel.peer is not None and worker.checked_pid() == worker.pid
        truth, namespace = worker.pid, candidate.adapter.namespace
        worker.pid, worker.channel.peer, worker.shared_cpu = None, None, None
        # the grader, its parent, the supervisor, not a number; and init, where the worker is not process 1
        for lie in (os.getpid(), os.getppid(), worker.process.pid, "7", -1, *([] if namespace else [1])):
            worker.said_hello({"pid": lie})
            assert worker.pid is None and worker.channel.peer is None and worker.shared_cpu is None
        if namespace and peer.direct_copies_possible():  # process 1 of its own PID namespace: found as the child
            worker.said_hello({"pid": 1})
            assert worker.pid == truth and peer.parent_of(truth) == worker.process.pid
    finally:
        candidate.adapter.close()


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="one CPU: nothing to share")
def test_a_call_shares_the_graders_cpu_with_the_worker_and_gives_it_back(tmp_path):
    path = tmp_path / "echo_adapter.py"
    path.write_text(textwrap.dedent(ECHO).replace("DUMPABLE_FLAG", "1"))
    before = os.sched_getaffinity(0)
    candidate = load_isolated(str(path), timeout_s=30)
    try:
        candidate.adapter.layer_norm(np.ones((1, 2, 4)), np.ones(4), np.zeros(4), 1e-6)
        worker = candidate.adapter._worker
        assert os.sched_getaffinity(0) == before
        assert len(os.sched_getaffinity(worker.pid)) == 1 and os.sched_getaffinity(worker.pid) <= before
    finally:
        candidate.adapter.close()


def test_the_direct_route_starts_at_a_few_megabytes():
    assert wire.DIRECT_MIN >= wire.REUSE  # a pushed message always lands in one of the channel's kept blocks
