"""Warm workers (conformance/boundary/isolation/warm.py): forked from a pre-imported process, each is sandboxed like a
cold one, starts with fresh random state, holds no way back to the warm process, and a worker that cannot be forked
(the process gone, a submission that ships its own torch) starts cold. The hostile submissions (test_hostile.py) run
through ``certify``, whose workers are warm."""

import os
import signal
import textwrap
import time

import numpy as np
import pytest

from conformance.boundary.isolation.proxy import Limits, load_isolated
from conformance.boundary.isolation.supervisor import stop_all_workers
from conformance.boundary.isolation.warm import WarmWorkers


@pytest.fixture(autouse=True)
def without_bubblewrap(monkeypatch):
    """Workers fork from a warm process only without bubblewrap (each bubblewrap sandbox starts its own
    interpreter): these tests are of the warm process."""
    monkeypatch.setenv("CONFORMANCE_BUBBLEWRAP", "off")

PROBE = textwrap.dedent('''
    import os
    import numpy as np

    from conformance import Conventions


    class Probe:
        conventions = Conventions(mask="keep", batch_first=True, dtype="float64", framework="numpy")

        def positional_encoding(self, n, d_model):  # fresh random state: what a new interpreter would draw
            return np.random.random((n, d_model))

        def layer_norm(self, x, gamma, beta, eps):  # what the worker holds: its open files, by kind
            kinds = []
            for fd in os.listdir("/proc/self/fd"):
                try:
                    kinds.append(os.readlink(f"/proc/self/fd/{fd}").split(":")[0])
                except OSError:  # the listing's own descriptor, closed since
                    pass
            return np.array([kinds.count("socket"), len(kinds)], dtype=np.float64)


    adapter = Probe()
''')


@pytest.fixture
def warm():
    with WarmWorkers() as processes:
        yield processes
    stop_all_workers()


@pytest.fixture
def probe(tmp_path):
    path = tmp_path / "probe" / "adapter.py"
    path.parent.mkdir()
    path.write_text(PROBE)
    return str(path)


def loaded(spec: str, warm=None):
    candidate = load_isolated(spec, timeout_s=30, limits=Limits(total_s=120), warm=warm)
    candidate.adapter.wait()
    return candidate.adapter


def test_a_warm_worker_is_sandboxed_as_a_cold_one(warm, probe):
    cold, forked = loaded(probe), loaded(probe, warm)
    assert not cold._worker.warm and forked._worker.warm
    for name in ("landlock", "namespace", "private_proc"):
        assert getattr(forked, name) == getattr(cold, name), name


def test_warm_workers_draw_fresh_random_state(warm, probe):
    first, second = loaded(probe, warm), loaded(probe, warm)
    assert not np.array_equal(first.positional_encoding(4, 8), second.positional_encoding(4, 8))


def test_a_warm_worker_holds_no_socket_back_to_its_warm_process(warm, probe):
    sockets, _ = loaded(probe, warm).layer_norm(np.zeros((1, 2)), np.ones(2), np.zeros(2), 1e-6)
    assert sockets == 0


def test_a_submission_that_ships_its_own_torch_gets_a_cold_worker(warm, probe):
    folder = os.path.dirname(probe)
    os.mkdir(os.path.join(folder, "torch"))
    with open(os.path.join(folder, "torch", "__init__.py"), "w") as package:
        package.write("SHIPPED = True\n")
    assert not loaded(probe, warm)._worker.warm


def test_when_the_warm_process_is_gone_workers_start_cold(warm, probe):
    assert loaded(probe, warm)._worker.warm
    (process,) = warm._processes.values()
    os.kill(process.process.pid, signal.SIGKILL)
    process.process.wait()
    time.sleep(0.1)
    adapter = loaded(probe, warm)
    assert adapter.positional_encoding(2, 4).shape == (2, 4)
    assert not loaded(probe, warm)._worker.warm  # the next one never asks it again


def test_a_warm_process_that_dies_before_it_forks_the_worker_leaves_it_to_a_cold_one(warm, probe):
    candidate = load_isolated(probe, timeout_s=30, limits=Limits(total_s=120), warm=warm, wait=False)
    (process,) = warm._processes.values()  # still importing torch: the request waits in its socket
    os.kill(process.process.pid, signal.SIGKILL)
    process.process.wait()
    candidate.adapter.wait()
    assert not candidate.adapter._worker.warm
    assert candidate.adapter.positional_encoding(2, 4).shape == (2, 4)
