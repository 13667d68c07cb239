"""The isolation's pieces: the plain-data wire, and the proxy adapter that forwards parts by name."""

import json
import os
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

from conformance.boundary.candidate import Candidate
from conformance.boundary.isolation.proxy import ProxyAdapter, load_isolated
from conformance.boundary.isolation.wire import Channel, Foreign, WireError, decode, encode
from conformance.errors import AdapterError


def round_trip(value):
    read, write = os.pipe()
    channel = Channel(read, write)
    try:
        channel.send(value)
        return channel.receive()
    finally:
        channel.close()


def test_plain_data_crosses_unchanged_and_arrays_arrive_writable_and_aligned():
    value = {"x": np.arange(6, dtype=np.float32).reshape(2, 3), "keep": np.array([True, False]),
             "pair": (np.float64(0.5), [1, "two", None, float("nan"), 2**70]), "ids": np.arange(3, dtype=np.int64)}
    back = round_trip(value)
    assert isinstance(back["pair"], tuple) and back["pair"][1][:3] == [1, "two", None] and back["pair"][1][4] == 2**70
    assert type(back["pair"][0]) is np.float64 and np.isnan(back["pair"][1][3])
    for name in ("x", "keep", "ids"):
        assert back[name].dtype == value[name].dtype and np.array_equal(back[name], value[name])
        assert back[name].flags.writeable and back[name].flags.aligned


@pytest.mark.parametrize(
    "array",
    [np.arange(6, dtype=">f4").reshape(2, 3),  # big-endian: arrives in native byte order
     np.arange(12.0).reshape(3, 4).T,  # not contiguous
     np.zeros((0, 3), dtype=np.float32),  # empty
     np.array([1 + 2j], dtype=np.complex64), np.float16([0.5, 2.0]), np.array(7, dtype=np.uint8)],
    ids=["big-endian", "transposed", "empty", "complex64", "float16", "0-d"],
)
def test_every_numeric_array_crosses_as_its_values_in_native_byte_order(array):
    back = round_trip({"x": array})["x"]
    assert type(back) is np.ndarray and back.shape == array.shape and np.array_equal(back, array)
    assert back.dtype == array.dtype.newbyteorder("=") and back.dtype.isnative and back.flags.c_contiguous


def test_a_str_subclass_crosses_as_its_text_and_an_int_subclass_as_a_description():
    import enum

    class Name(str):
        pass

    class Level(enum.IntEnum):
        HIGH = 3

    back = round_trip([Name("layer_norm"), Level.HIGH, np.int64(4), np.bool_(True)])
    assert back[0] == "layer_norm" and type(back[0]) is str
    assert isinstance(back[1], Foreign) and type(back[1]).__qualname__.endswith("Level")
    assert type(back[2]) is np.int64 and back[2] == 4 and type(back[3]) is np.bool_ and back[3]


def test_an_ndarray_subclass_crosses_as_its_plain_bytes():
    class Agreeable(np.ndarray):
        def __eq__(self, other):
            return np.ones(self.shape, bool)

    back = round_trip(np.arange(3.0).view(Agreeable))
    assert type(back) is np.ndarray and not (back == np.full(3, 7.0)).any()


def test_other_objects_cross_as_a_description_of_their_type_only():
    import fractions

    back = round_trip({"value": fractions.Fraction(1, 3), "weird": {1: "int key"}})
    assert isinstance(back["value"], Foreign) and type(back["value"]).__module__ == "fractions"
    assert type(back["value"]).__qualname__ == "Fraction"
    assert type(back["weird"]).__qualname__ == "dict (with keys that are not str)"


@pytest.mark.parametrize(
    ("header", "buffers", "message"),
    [
        (["a", 0, "|O", [1]], [bytearray(8)], "may not cross"),  # object arrays would unpickle
        (["a", 0, "<f8", [2]], [bytearray(8)], "does not fill"),
        (["x", 1], [], "unknown or malformed node tag"),
        (["m", 1, ["forward"]], [], "unknown or malformed node tag"),  # a model handle, where none may be
    ],
)
def test_malformed_or_unsafe_messages_are_refused(header, buffers, message):
    with pytest.raises(WireError, match=message):
        decode(json.dumps(header).encode(), buffers)


def test_a_header_nested_past_the_stack_is_malformed_not_a_crash():
    from conformance.boundary.isolation.wire import parse_header

    with pytest.raises(WireError, match="nested too deep"):
        parse_header(b"[" * 200_000 + b"]" * 200_000)


def test_a_large_message_arrives_whole_writable_and_aligned():
    read, write = os.pipe()
    channel = Channel(read, write)
    weights = {"E": np.arange(2**20, dtype=np.float32).reshape(1024, 1024), "b": np.ones(3)}
    received = []
    reader = threading.Thread(target=lambda: received.append(channel.receive(deadline=time.monotonic() + 30)))
    reader.start()  # 4 MiB: more than the pipe holds
    try:
        channel.send(weights, deadline=time.monotonic() + 30)
        reader.join(30)
    finally:
        channel.close()
    (back,) = received
    assert np.array_equal(back["E"], weights["E"]) and back["b"].tolist() == [1.0] * 3
    assert all(a.flags.writeable and a.flags.aligned for a in back.values())


ECHO = '''
from conformance import Conventions


class Adapter:
    conventions = Conventions(mask="keep", batch_first=True, dtype="float64", framework="numpy")

    def layer_norm(self, x, gamma, beta, eps):
        return x * 2.0


adapter = Adapter()
'''


def test_a_worker_echoes_large_arrays(tmp_path):
    path = tmp_path / "echo_adapter.py"
    path.write_text(ECHO)
    candidate = load_isolated(str(path), timeout_s=30)
    try:
        x = np.random.default_rng(0).standard_normal((4, 512, 512))  # 8 MB each way: far more than the pipe holds
        assert np.array_equal(candidate.adapter.layer_norm(x, np.ones(512), np.zeros(512), 1e-6), x * 2.0)
    finally:
        candidate.adapter.close()


def test_large_messages_reuse_blocks_only_while_nothing_decoded_from_them_is_alive():
    to_worker, to_grader = os.pipe(), os.pipe()
    grader, worker = Channel(to_grader[0], to_worker[1]), Channel(to_worker[0], to_grader[1])

    def through(value):
        grader.send({"w": np.full(value[0], value[1])}, deadline=time.monotonic() + 5)
        return worker.receive(deadline=time.monotonic() + 5)["w"]

    def address(array_):
        return array_.__array_interface__["data"][0]

    try:
        kept = through((20_000, 1.0))  # 160 kB: read into a block the channel keeps
        again = through((20_000, 2.0))
        assert address(again) != address(kept) and kept[0] == 1.0  # the first is alive: another block
        blocks = {address(kept), address(again)}
        del kept, again
        third = through((10_000, 3.0))
        assert address(third) in blocks  # nothing holds them: reused
        fourth = through((10_000, 4.0))
        assert address(fourth) in blocks - {address(third)} and third[0] == 3.0 and fourth[0] == 4.0
        small = through((10, 5.0))
        assert small.flags.writeable and small[0] == 5.0
    finally:
        grader.close()
        worker.close()


def test_encode_never_pickles():
    header, buffers = encode({"x": np.zeros(2), "s": "text"})
    assert b"pickle" not in header and all(isinstance(b, memoryview) for b in buffers)


ADAPTER = '''
from conformance import Conventions
import numpy as np


class Model:
    def forward(self, src, tgt_in):
        return np.zeros((*tgt_in.shape, 5))


class Adapter:
    conventions = Conventions(mask="blocked", batch_first=False, dtype="float64", framework="numpy")
    model_class = Model

    def layer_norm(self, x, gamma, beta, eps):
        raise NotImplementedError("layer norm comes in week 3")

    def positional_encoding(self, n, d_model):
        raise ValueError(f"no PE for n={n}")

    def build_model(self, config, seed):
        return Model()


adapter = Adapter()
'''


@pytest.fixture
def isolated(tmp_path):
    path = tmp_path / "student_adapter.py"
    path.write_text(textwrap.dedent(ADAPTER))
    candidate = load_isolated(str(path), timeout_s=10)
    yield candidate
    candidate.adapter.close()


def test_the_proxy_has_the_conventions_and_exactly_the_parts_of_the_real_adapter(isolated):
    assert isinstance(isolated.adapter, ProxyAdapter)
    conventions = isolated.conventions.as_dict()  # every field, rebuilt from plain data
    assert {k: conventions[k] for k in ("mask", "batch_first", "dtype", "framework")} == {
        "mask": "blocked", "batch_first": False, "dtype": "float64", "framework": "numpy"}
    assert isolated.provided_parts() == ["positional_encoding", "layer_norm", "build_model", "model.forward"]
    assert "conformance_candidate_student_adapter" not in sys.modules  # the grader never imported it


def test_not_implemented_keeps_its_reason_and_other_exceptions_their_type(isolated):
    with pytest.raises(NotImplementedError, match="layer norm comes in week 3"):
        isolated.adapter.layer_norm(np.zeros(2), np.ones(2), np.zeros(2), 1e-5)
    with pytest.raises(AdapterError, match=r"positional_encoding raised ValueError: no PE for n=3"):
        isolated.positional_encoding(3, 4)


def test_build_model_returns_a_model_proxy_with_only_its_parts(isolated):
    from conformance.config import toy_config

    model = isolated.build_model(toy_config(), seed=0)
    assert not hasattr(model.model, "train_step")
    assert Candidate.provides(isolated, "model.forward") and not isolated.provides("model.train_step")


def test_a_worker_closed_without_waiting_ends_by_itself_and_is_reaped_at_the_end(isolated):
    from conformance.boundary.isolation import supervisor

    worker = isolated.adapter._worker
    isolated.adapter.close(wait=False)  # the end of a run: the report is printed while the worker winds down
    assert worker.process.wait(timeout=10) == 0  # the supervisor killed the worker and left on its own
    assert worker in supervisor._LIVE
    supervisor.stop_all_workers()
    # its folder: on this machine's disk without bubblewrap (its supervisor removed it), else its own tmpfs
    assert worker not in supervisor._LIVE and (worker.host_dir is None or not worker.host_dir.exists())
    assert worker.exit_report["reason"] == "stopped by the grader"


def test_the_report_counts_the_cpu_time_and_memory_of_the_worker_still_running(isolated):
    """The report is written while the last worker runs: its usage is read from /proc (it was 0 before)."""
    from conformance.config import toy_config

    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:  # a toy build costs the worker a clock tick or two: build until /proc shows one
        isolated.build_model(toy_config(), seed=0)
        live = isolated.adapter.summary()
        if live["worker_cpu_s"] > 0:
            break
    worker = isolated.adapter._worker
    assert live["worker_cpu_s"] > 0 and live["worker_max_rss_mib"] > 10, (live, worker.pid, worker.supervisor_pid())
    isolated.adapter.close()  # ended: the supervisor's report, which counts at least as much
    ended = isolated.adapter.summary()
    assert ended["worker_cpu_s"] >= live["worker_cpu_s"] and ended["worker_max_rss_mib"] >= 10, ended


def test_what_the_worker_imported_is_frozen_out_of_full_garbage_collections(tmp_path):
    """``gc.freeze`` after the import: a full collection in the worker walks only what the calls made (a
    model built per check; ``parameter_count`` ran twice as slow as in-process without it)."""
    path = tmp_path / "counts_frozen_objects.py"
    path.write_text(textwrap.dedent('''
        import gc
        from conformance import Conventions


        class Adapter:
            conventions = Conventions(mask="keep", batch_first=True, dtype="float64", framework="numpy")

            def learning_rate(self, step, d_model, warmup):
                return float(gc.get_freeze_count())


        adapter = Adapter()
    '''))
    candidate = load_isolated(str(path), timeout_s=10)
    try:
        assert candidate.adapter.learning_rate(1, 512, 4000) > 1000  # numpy, the suite's modules, the adapter
    finally:
        candidate.adapter.close()
