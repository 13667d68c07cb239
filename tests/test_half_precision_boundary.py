"""Half precision at the boundary (``--dtype float16|bfloat16``): the rounding and casts of
``boundary/isolation/frameworks.py``, the declarations an adapter makes (``Conventions.dtypes``, ``with_dtype``), the
switch to the asked dtype in process and in an isolated worker, the refusal of an adapter that does not declare it,
bfloat16 results widened, and the report's ``dtype``."""

from __future__ import annotations

import jsonschema
import ml_dtypes
import numpy as np
import pytest
import torch

from conformance.adapter import Conventions
from conformance.boundary.candidate import Candidate
from conformance.boundary.isolation import frameworks
from conformance.boundary.loading import load
from conformance.cli import EXIT_NOTHING_RAN
from conformance.errors import LoadError, PartNotImplemented
from reports import view

WHERE = ["--no-isolate", "--isolate"]
# the layer_norm part's checks of every run, none of those that only a half-precision run adds
LAYER_NORM = "layer_norm_matches or layer_norm_normalises or published_layer_norm"

# A tiny adapter: layer_norm and positional_encoding, computing in float64 and answering in the dtype it computes in
# (bfloat16 as ml_dtypes' bfloat16, as ``numpy.asarray`` of a JAX or torch bfloat16 array gives). Its file starts with
# DECLARES (its Conventions.dtypes) and PROBE (layer_norm says what it received, as its NotImplementedError's reason,
# which the report keeps, instead of answering).
TINY = '''
import ml_dtypes
import numpy as np

from conformance import Conventions


class Tiny:
    conventions = Conventions(framework="numpy", dtypes=DECLARES)
    dtype = "float32"  # what it computes in: with_dtype switches it

    def with_dtype(self, dtype):
        if dtype not in DECLARES:  # the boundary asks only for a declared dtype (frameworks.switch_dtype)
            raise AssertionError(f"with_dtype({dtype!r}) asked of an adapter declaring {DECLARES}")
        switched = Tiny()
        switched.dtype, switched.conventions = dtype, Conventions(framework="numpy", dtype=dtype)
        return switched

    def received(self, *arrays):
        """What the arrays are: their dtypes, and for bfloat16 whether they hold bfloat16 values only."""
        said = ", ".join(str(a.dtype) for a in arrays)
        if self.dtype == "bfloat16":
            exact = all(np.array_equal(a, a.astype(ml_dtypes.bfloat16).astype(np.float32)) for a in arrays)
            said += f"; bfloat16 values: {exact}"
        return said

    def answer(self, value):
        return value.astype(ml_dtypes.bfloat16 if self.dtype == "bfloat16" else self.dtype)

    def layer_norm(self, x, gamma, beta, eps):
        said = self.received(x, gamma, beta)
        if PROBE:
            raise NotImplementedError(f"in {self.dtype} received {said}")
        wanted = {"bfloat16": "float32, float32, float32; bfloat16 values: True"}.get(
            self.dtype, ", ".join([self.dtype] * 3))
        if said != wanted:
            raise TypeError(f"in {self.dtype} received {said}")
        centred = x.astype(np.float64) - x.astype(np.float64).mean(-1, keepdims=True)
        return self.answer(centred / np.sqrt((centred**2).mean(-1, keepdims=True) + eps) * gamma + beta)

    def positional_encoding(self, n, d_model):
        angles = np.arange(n)[:, None] / 10000.0 ** (np.arange(0, d_model, 2) / d_model)
        pe = np.zeros((n, d_model))
        pe[:, 0::2], pe[:, 1::2] = np.sin(angles), np.cos(angles[:, : d_model // 2])
        return self.answer(pe)


adapter = Tiny()
'''


def tiny(tmp_path, declares: dict, probe: bool = False, name: str = "tiny") -> str:
    path = tmp_path / f"{name}.py"
    path.write_text(f"DECLARES = {declares!r}\nPROBE = {probe!r}\n" + TINY)
    return str(path)


def certify_run(certify, impl: str, *args: str):
    run = certify(impl, "--no-training", "--no-diagnosis", "--progress", "off", *args)
    assert run.report is not None and "Traceback" not in run.err, run.err[-3000:]
    return run


def schema_errors(report: dict) -> list[str]:
    validator = jsonschema.Draft202012Validator(view.schema(), format_checker=jsonschema.FormatChecker())
    return [f"{list(e.absolute_path)}: {e.message[:200]}" for e in validator.iter_errors(report)]


# -- rounding and casting -------------------------------------------------------------------------------------------
def float32_bits(values) -> np.ndarray:
    return np.asarray(values, dtype=np.uint32).view(np.float32)


def test_round_to_bfloat16_rounds_as_torch_does():
    rng = np.random.default_rng(0)
    tops = rng.integers(0, 2**16, size=2000, dtype=np.uint32) << np.uint32(16)
    ties = tops | np.uint32(0x8000)  # halfway: to the even top half, up or down
    near = np.concatenate([tops | np.uint32(0x7FFF), tops | np.uint32(0x8001)])
    anywhere = rng.integers(0, 2**32, size=20000, dtype=np.uint32)  # every exponent: subnormals, inf, NaN too
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, np.finfo(np.float32).max,
                        -np.finfo(np.float32).max, np.finfo(np.float32).tiny, np.finfo(np.float32).smallest_subnormal,
                        -np.finfo(np.float32).smallest_subnormal, 1.0 + 2.0**-8, 1.0 + 3 * 2.0**-8, 1e-40, -3e-39],
                       dtype=np.float32)
    x = np.concatenate([float32_bits(ties), float32_bits(near), float32_bits(anywhere), special])
    assert np.isnan(x).any() and np.isinf(x).any() and ((x != 0) & (np.abs(x) < np.finfo(np.float32).tiny)).any()

    ours = frameworks.round_to_bfloat16(x)
    torchs = torch.tensor(x).to(torch.bfloat16).float().numpy()
    assert ours.dtype == np.float32 and ours.shape == x.shape
    nan = np.isnan(torchs)
    assert np.array_equal(np.isnan(ours), nan)
    mismatch = np.flatnonzero(ours[~nan].view(np.uint32) != torchs[~nan].view(np.uint32))  # -0.0 and 0.0 differ too
    assert mismatch.size == 0, [(x[~nan][i], ours[~nan][i], torchs[~nan][i]) for i in mismatch[:5]]
    # ties went both ways (to even): 1 + 2^-8 down to 1, 1 + 3 x 2^-8 up to 1 + 2^-6
    assert list(frameworks.round_to_bfloat16(np.float32([1 + 2**-8, 1 + 3 * 2**-8]))) == [1.0, 1 + 2**-6]


def test_cast_gives_float16_arrays_and_bfloat16_values_in_float32():
    x = np.random.default_rng(1).normal(size=(3, 5)) * 100  # float64
    half = frameworks.cast(x, "float16")
    assert half.dtype == np.float16 and np.array_equal(half, x.astype(np.float16))
    brain = frameworks.cast(x, "bfloat16")
    assert brain.dtype == np.float32 and brain.shape == x.shape
    assert np.array_equal(brain, x.astype(np.float32).astype(ml_dtypes.bfloat16).astype(np.float32))
    assert not np.array_equal(brain, x.astype(np.float32))  # rounded, not merely float32
    assert frameworks.cast(x, "float32").dtype == np.float32 and frameworks.cast(x, "float64").dtype == np.float64


def test_widen_turns_bfloat16_arrays_into_float32_exactly_and_leaves_the_rest():
    values = np.random.default_rng(2).normal(size=(4, 6)).astype(ml_dtypes.bfloat16)
    wide = frameworks.widen(values)
    assert wide.dtype == np.float32 and np.array_equal(wide, values.astype(np.float32))
    nested = frameworks.widen({"out": (values, [values]), "loss": 1.5})
    assert nested["out"][0].dtype == np.float32 and nested["out"][1][0].dtype == np.float32
    assert type(nested["out"]) is tuple and nested["loss"] == 1.5
    others = [np.float16([1.5]), np.float32([2.5]), np.int64([3]), 2.0, "text", None]
    assert all(frameworks.widen(value) is value for value in others)
    # what an adapter computing in bfloat16 returns is widened at the boundary; another's is not
    assert frameworks.from_framework(values, {"dtype": "bfloat16"}).dtype == np.float32
    assert frameworks.from_framework(values, {"dtype": "float32"}) is values


# -- declarations ---------------------------------------------------------------------------------------------------
def adapter_declaring(tmp_path, conventions: str, with_dtype: bool) -> str:
    path = tmp_path / "declares.py"
    path.write_text("from conformance import Conventions\n\n\nclass A:\n"
                    f"    conventions = Conventions({conventions})\n\n"
                    "    def layer_norm(self, x, gamma, beta, eps):\n        return x\n"
                    + ("\n    def with_dtype(self, dtype):\n        return self\n" if with_dtype else "")
                    + "\n\nadapter = A()\n")
    return str(path)


@pytest.mark.parametrize("isolate", [False, True], ids=["in_process", "isolated"])
def test_half_dtypes_without_with_dtype_warn_and_are_not_implemented_in_a_half_run(tmp_path, isolate):
    """Conventions copied from an adapter that has with_dtype (the reference's) onto one without load in float32 with
    a warning naming the fix; a --dtype run finds every part not implemented, naming it too. Isolated, the worker
    switches only an adapter that has with_dtype (worker.load), so that the grader decides as in process."""
    spec = adapter_declaring(tmp_path, 'dtypes={"float16": "native"}', with_dtype=False)
    fix = "has no with_dtype(dtype)"
    plain = load(spec, isolate=isolate, timeout_s=10)
    assert any(fix in warning for warning in plain.load_warnings)
    half = load(spec, isolate=isolate, dtype="float16", timeout_s=10)
    with pytest.raises(PartNotImplemented, match=r"declares float16 \(Conventions.dtypes\) but has no with_dtype"):
        half.layer_norm(np.zeros((1, 4)), np.ones(4), np.zeros(4), 1e-5)
    for candidate in (plain, half):
        if isolate:
            candidate.adapter.close()


@pytest.mark.parametrize("conventions", ['dtypes={"float8": "native"}', 'dtypes={"float16": "sometimes"}',
                                         'dtypes={"float32": "native"}', 'dtype="half"'])
def test_an_unknown_dtype_or_how_is_refused(tmp_path, conventions):
    with pytest.raises(LoadError, match=r"is not usable. Fix: dtype one of float32, float64, float16, bfloat16;"
                                        r" dtypes maps float16 or bfloat16 to 'native' or 'autocast'"):
        load(adapter_declaring(tmp_path, conventions, with_dtype=True), isolate=False)


def test_declared_half_dtypes_with_with_dtype_load():
    assert Conventions(dtype="bfloat16").dtype == "bfloat16"
    candidate = load("reference", isolate=False, dtype="float16")
    assert candidate.conventions.dtype == "float16" and candidate.dtype_refusal is None


@pytest.mark.parametrize("isolate", [False, True], ids=["in_process", "isolated"])
def test_with_dtype_that_raises_or_returns_no_adapter_is_a_load_error(tmp_path, isolate):
    # in process, what with_dtype returns is validated like the adapter (loading.load): None was a traceback
    for body, said in (("raise RuntimeError('no half today')", "with_dtype('float16') raised RuntimeError: no half"),
                       ("return None", "the adapter declares no conventions")):
        path = tmp_path / f"switch_{isolate}_{len(body)}.py"
        path.write_text("from conformance import Conventions\n\n\nclass A:\n"
                        "    conventions = Conventions(dtypes={'float16': 'native'})\n\n"
                        f"    def with_dtype(self, dtype):\n        {body}\n\n"
                        "    def layer_norm(self, x, gamma, beta, eps):\n        return x\n\n\nadapter = A()\n")
        candidate = None
        with pytest.raises(LoadError) as caught:
            candidate = load(str(path), isolate=isolate, dtype="float16", timeout_s=10)
            candidate.conventions  # noqa: B018 - an isolated load is refused when the worker's hello arrives
        if candidate is not None:
            candidate.adapter.close()
        assert said in str(caught.value) and "import-time" not in str(caught.value)


def test_a_candidate_asked_for_a_dtype_its_adapter_does_not_declare_refuses_every_part():
    class Float32Only:
        conventions = Conventions(framework="numpy", dtypes={"float16": "native"})

        def layer_norm(self, x, gamma, beta, eps):
            raise AssertionError("called in a dtype it does not compute in")

        positional_encoding = layer_norm

        def with_dtype(self, dtype):  # the loader's to call (it declares float16), never the candidate's
            raise AssertionError(f"with_dtype({dtype!r}) called")

    refused = Candidate(Float32Only(), name="float32_only", dtype="bfloat16")
    for call in (lambda: refused.layer_norm(np.ones((2, 4)), np.ones(4), np.zeros(4)),
                 lambda: refused.positional_encoding(3, 4)):
        with pytest.raises(PartNotImplemented) as caught:
            call()
        assert caught.value.fields["reason"] == ("computes in float32, float16 only; --dtype bfloat16 needs"
                                                 " Conventions(dtypes={'bfloat16': 'native' or 'autocast'}) and"
                                                 " with_dtype(dtype)")
    for dtype in (None, "float32"):  # no --dtype, or the one it computes in: called
        assert Candidate(Float32Only(), name="float32_only", dtype=dtype).dtype_refusal is None


# -- runs -----------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("where", WHERE, ids=["in_process", "isolated"])
def test_a_float16_run_switches_the_adapter_which_receives_float16(certify, tmp_path, where):
    run = certify_run(certify, tiny(tmp_path, {"float16": "native"}, probe=True), where, "--dtype", "float16",
                      "-k", "layer_norm_matches_published or pe_matches_formula")
    assert run.report["dtype"] == "float16"
    assert run.report["implementations"][0]["conventions"]["dtype"] == "float16"
    checks = {check["id"]: check for check in run.report["checks"]}
    assert set(checks) == {"layer_norm_matches_published_example", "pe_matches_formula_for_any_size"}
    # with_dtype was called (its adapter computes in float16) and the arrays crossed as numpy.float16
    layer_norm = checks["layer_norm_matches_published_example"]
    assert layer_norm["status"] == "not_implemented"
    assert "in float16 received float16, float16, float16" in layer_norm["message"]
    assert checks["pe_matches_formula_for_any_size"]["status"] == "passed"


@pytest.mark.parametrize("where", WHERE, ids=["in_process", "isolated"])
def test_an_adapter_without_the_asked_dtype_is_not_implemented_in_every_check(certify, tmp_path, where):
    # its with_dtype raises if asked: a dtype it does not declare is never asked of it (frameworks.switch_dtype)
    run = certify_run(certify, tiny(tmp_path, {"bfloat16": "autocast"}), where, "--dtype", "float16", "-k",
                      f"{LAYER_NORM} or pe_has_one_row or pe_matches_formula")
    assert run.code == EXIT_NOTHING_RAN and run.report["dtype"] == "float16"  # not EXIT_INTERNAL: no crash
    assert run.report["implementations"][0]["conventions"]["dtype"] == "float32"
    statuses = run.statuses()
    assert len(statuses) >= 4 and set(statuses.values()) == {"not_implemented"}, statuses
    for check in run.report["checks"]:
        assert ("computes in float32, bfloat16 only; --dtype float16 needs Conventions(dtypes={'float16': 'native'"
                " or 'autocast'}) and with_dtype(dtype)") in check["message"], check["message"]


@pytest.mark.parametrize("where", WHERE, ids=["in_process", "isolated"])
def test_a_bfloat16_run_widens_what_comes_back(certify, tmp_path, where):
    # the adapter answers in ml_dtypes' bfloat16, which is no floating dtype to NumPy (kind "V"): without
    # frameworks.from_framework's widening every check would be a BadOutput (isolated: the worker widens it)
    spec = tiny(tmp_path, {"bfloat16": "autocast", "float16": "native"})
    run = certify_run(certify, spec, where, "--dtype", "bfloat16", "-k", f"{LAYER_NORM} or pe_matches_formula")
    assert run.report["dtype"] == "bfloat16"
    assert run.report["implementations"][0]["conventions"]["dtype"] == "bfloat16"
    statuses = run.statuses()
    assert len(statuses) >= 4 and set(statuses.values()) == {"passed"}, {
        check["id"]: check["message"] for check in run.report["checks"] if check["status"] != "passed"}
    assert schema_errors(run.report) == []


@pytest.mark.parametrize("dtype", [None, "float16"], ids=["default", "float16"])
def test_the_report_records_the_asked_dtype_and_validates(certify, tmp_path, dtype):
    spec = tiny(tmp_path, {"float16": "native"})
    run = certify_run(certify, spec, "--no-isolate", "-k", LAYER_NORM, *(("--dtype", dtype) if dtype else ()))
    assert "dtype" in run.report and run.report["dtype"] == dtype  # None: the float32 default, each its own dtype
    assert run.report["implementations"][0]["conventions"]["dtype"] == (dtype or "float32")
    assert set(run.statuses().values()) == {"passed"}, run.statuses()
    assert schema_errors(run.report) == []
    assert view.schema()["properties"]["dtype"]["type"] == ["string", "null"]
