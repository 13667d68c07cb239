"""The catalogue's answers kept on disk (conformance.diagnosis.answer_cache): a second run reads them and asks no
mutant, and diagnoses the same; a changed suite, a corrupt entry, a question without a stable name, --no-cache
and grade never read (or write) what they must not."""

import dataclasses
import functools
import json
import os
import shutil
import subprocess
import sys
from collections import OrderedDict

import numpy as np
import pytest
from conftest import adapter_path

from conformance.cli import main
from conformance.diagnosis import answer_cache, catalogue, matching
from conformance.problems import questions
from conformance.problems.scenarios import LayerSizes

FAILING = ("mutant:attention_no_scaling", "--no-training", "-k", "self_attention_matches_reference")
SIZES = LayerSizes(B=1, S=3, T=2, h=2, d_k=2, d_ff=8, bias=True, seed=3)

# Run in a fresh process: certify, counting the answers computed for members of the catalogue.
COUNTING_RUN = """
import json, sys
from conformance.diagnosis import catalogue, matching
asked = []
answer = matching._answer
def counted(question, candidate, problem=None):
    asked.append(catalogue.catalogue_name(candidate))
    return answer(question, candidate, problem)
matching._answer = counted
from conformance.cli import main
code = main(sys.argv[1:])
print(json.dumps({"code": code, "catalogue": sum(name is not None for name in asked), "all": len(asked)}))
"""


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """An empty cache folder, and an empty memory: every answer this test needs comes from disk or is computed."""
    monkeypatch.setenv(answer_cache.CACHE_DIR_ENV, str(tmp_path / "cache"))
    monkeypatch.delenv(answer_cache.SWITCH_ENV, raising=False)
    monkeypatch.setattr(matching, "_kept", OrderedDict())
    return tmp_path / "cache"


@pytest.fixture
def computed(monkeypatch) -> list:
    """The catalogue members whose answer was computed (not read), in order."""
    asked = []
    answer = matching._answer

    def counted(question, candidate, problem=None):
        asked.append(catalogue.catalogue_name(candidate))
        return answer(question, candidate, problem)

    monkeypatch.setattr(matching, "_answer", counted)
    return asked


def members(computed: list) -> int:
    """How many of the answers computed were the catalogue's (the candidate's own are computed every time)."""
    return sum(name is not None for name in computed)


def entries(folder) -> list:
    return sorted(path for path in folder.rglob("*.npy") if not path.name.startswith(".tmp-"))


def certify_in_process(tmp_path, *args) -> tuple[int, dict]:
    report = tmp_path / "report.json"
    code = main(["certify", *args, "--json", str(report), "--progress", "off"])
    return code, json.loads(report.read_text())


def diagnoses(report: dict) -> dict:
    return {check["id"]: (check["diagnosis"], check["likely_cause"]) for check in report["checks"]
            if check["status"] == "failed"}


def a_member():
    return catalogue.known_bugs()[0]


# -- a second run ---------------------------------------------------------------------------------------------


def test_a_second_run_in_a_fresh_process_diagnoses_the_same_and_asks_no_mutant(tmp_path, cache, computed, capsys):
    code, first = certify_in_process(tmp_path, *FAILING)
    assert code == 1 and diagnoses(first) and all(cause for _, cause in diagnoses(first).values())
    assert members(computed) > 50  # the whole catalogue asked, once
    assert entries(cache)
    report = tmp_path / "second.json"
    done = subprocess.run([sys.executable, "-c", COUNTING_RUN, "certify", *FAILING, "--json", str(report),
                           "--progress", "off"], capture_output=True, text=True, cwd=tmp_path,
                          env={**os.environ, answer_cache.CACHE_DIR_ENV: str(cache)})
    counts = json.loads(done.stdout.strip().splitlines()[-1])
    assert counts["code"] == 1, done.stderr[-2000:]
    assert counts["catalogue"] == 0 and counts["all"] > 0  # the candidate itself is still asked
    assert diagnoses(json.loads(report.read_text())) == diagnoses(first)


def test_no_cache_and_the_switch_write_nothing(tmp_path, cache, computed, capsys, monkeypatch):
    code, report = certify_in_process(tmp_path, *FAILING, "--no-cache")
    assert code == 1 and diagnoses(report) and not entries(cache)
    monkeypatch.setenv(answer_cache.SWITCH_ENV, "0")
    matching.known_answer(matching.Question(questions.self_attention_weights), a_member().candidate, SIZES,
                          disk_cache=True)
    assert computed and not entries(cache)


def test_a_run_without_the_disk_cache_neither_reads_nor_writes_it_nor_trusts_what_was_read(cache, computed,
                                                                                            monkeypatch):
    """``disk_cache=False`` (what ``Check`` passes for --no-cache and grade), in a process whose memory holds an
    answer read from disk: that answer is recomputed, and the folder is not touched."""
    ask(a_member())
    monkeypatch.setattr(matching, "_kept", OrderedDict())
    ask(a_member())  # read from disk, now kept in memory as read
    written = {path: path.stat().st_mtime_ns for path in entries(cache)}
    touched = []
    monkeypatch.setattr(answer_cache, "read", lambda key: touched.append(key) or (False, None))
    monkeypatch.setattr(answer_cache, "write", lambda key, answer: touched.append(key))
    ask(a_member(), disk_cache=False)
    assert members(computed) == 2 and not touched
    assert {path: path.stat().st_mtime_ns for path in entries(cache)} == written


def test_grade_neither_reads_nor_writes_the_cache_nor_trusts_what_was_read(tmp_path, cache, computed, capsys,
                                                                            monkeypatch):
    """A submission runs on the grader's machine: anything on disk may be its doing. Not even an answer read
    from disk earlier in the same process is used."""
    lr_doubled = (adapter_path("lr_doubled"), "-k", "lrate_matches_formula_for_any_step")
    certify_in_process(tmp_path, *lr_doubled)
    monkeypatch.setattr(matching, "_kept", OrderedDict())
    asked = members(computed)
    certify_in_process(tmp_path, *lr_doubled)  # every catalogue answer read from disk, now in memory too
    assert asked > 50 and members(computed) == asked
    written = {path: path.stat().st_mtime_ns for path in entries(cache)}
    touched = []
    monkeypatch.setattr(answer_cache, "read", lambda key: touched.append(key) or (False, None))
    folder = tmp_path / "ada"
    folder.mkdir()
    shutil.copy(adapter_path("lr_doubled"), folder / "adapter.py")
    report = tmp_path / "graded.json"
    main(["grade", str(folder), "--json", str(report), *lr_doubled[1:]])
    assert any(check["diagnosis"] for check in json.loads(report.read_text())["checks"])
    assert not touched and {path: path.stat().st_mtime_ns for path in entries(cache)} == written
    assert members(computed) >= 2 * asked - 1  # recomputed (the grade's seed draws its own failing example)


# -- entries --------------------------------------------------------------------------------------------------


def ask(member, answer=questions.self_attention_weights, problem=SIZES, *, disk_cache=True):
    return matching.known_answer(matching.Question(answer), member.candidate, problem, disk_cache=disk_cache)


def test_an_answer_comes_back_from_disk_equal_and_read_only(cache, computed, monkeypatch):
    first = ask(a_member())
    monkeypatch.setattr(matching, "_kept", OrderedDict())
    again = ask(a_member())
    assert len(computed) == 1 and np.array_equal(first, again) and not again.flags.writeable


def test_a_changed_digest_ignores_old_entries_and_removes_their_folder_later(cache, computed, monkeypatch):
    ask(a_member())
    (old,) = cache.iterdir()
    monkeypatch.setattr(matching, "_kept", OrderedDict())
    monkeypatch.setattr(answer_cache, "source_digest", lambda: "0" * 24)
    ask(a_member())
    assert len(computed) == 2 and (cache / ("answers-" + "0" * 24)).is_dir()
    os.utime(old, (0, 0))  # unused for long: an older version of the suite
    answer_cache._remove_stale_siblings.cache_clear()
    answer_cache.tidy(cache / ("answers-" + "0" * 24))
    assert not old.exists()


def test_the_digest_follows_every_source_file_and_the_versions(tmp_path):
    root = tmp_path / "package"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "mutant.py").write_text("x = 1\n")
    (root / "notes.txt").write_text("not code")
    roots, versions = {"conformance": root}, {"numpy": "2.0"}
    before = answer_cache.digest_of(roots, versions)
    (root / "notes.txt").write_text("still not code")
    assert answer_cache.digest_of(roots, versions) == before
    (root / "sub" / "mutant.py").write_text("x = 2\n")
    assert answer_cache.digest_of(roots, versions) != before
    assert answer_cache.digest_of(roots, {"numpy": "2.1"}) != answer_cache.digest_of(roots, versions)


@pytest.mark.parametrize("damage", [b"", b"\x93NUMPY\x01\x00garbage", b"not an entry at all"])
def test_a_corrupt_entry_is_a_miss_and_is_rewritten(cache, computed, monkeypatch, damage):
    first = ask(a_member())
    (entry,) = entries(cache)
    entry.write_bytes(damage)
    monkeypatch.setattr(matching, "_kept", OrderedDict())
    again = ask(a_member())
    assert len(computed) == 2 and np.array_equal(first, again)
    found, stored = answer_cache.read(entry.stem)
    assert found and np.array_equal(stored, first)


def test_a_bug_that_could_not_answer_is_kept_as_none(cache, computed, monkeypatch):
    monkeypatch.setattr(matching, "_answer", lambda *args: computed.append("x"))  # every member fails
    assert ask(a_member()) is None
    monkeypatch.setattr(matching, "_kept", OrderedDict())
    assert ask(a_member()) is None and computed == ["x"]  # the second time, from disk


def test_questions_and_candidates_without_a_stable_name_are_not_written(cache, computed):
    member = a_member()
    ask(member, answer=lambda candidate, sizes: questions.self_attention_weights(candidate, sizes))
    ask(member, answer=functools.partial(questions.self_attention_weights))  # stable: written
    written = entries(cache)
    copy = catalogue.KnownBug("copy", "a copy", type(member.candidate)(member.candidate.adapter, name="mutant:copy",
                                                                          timeout_s=None))
    ask(copy)  # the same adapter, but not the catalogue's own candidate: unnamed
    assert len(computed) == 3 and len(written) == 1 and entries(cache) == written


def module_function(candidate, problem):
    return problem


def test_stable_identities_name_the_package_s_functions_frozen_dataclasses_and_partials():
    identity = answer_cache.stable_identity
    assert identity(questions.logits) == identity(questions.logits) != identity(questions.memory)
    assert identity(functools.partial(questions.logits, k=2)) != identity(functools.partial(questions.logits, k=3))
    assert identity(SIZES) != identity(dataclasses.replace(SIZES, seed=4))

    class Asker:
        def answer(self, candidate, problem):
            return problem

    for unnamed in (lambda c, p: p, Asker().answer, module_function,  # a test's function: not in the digest
                    functools.partial(questions.logits, Asker()), {"a": 1}):
        with pytest.raises(answer_cache.Uncacheable):
            identity(unnamed)


def test_two_processes_writing_one_key_leave_a_readable_entry(tmp_path, cache):
    writer = ("import sys, numpy as np\nfrom conformance.diagnosis import answer_cache\n"
              "for i in range(200):\n"
              "    answer_cache.write('ab' + '0' * 62, np.full(int(sys.argv[1]), float(sys.argv[1])))\n")
    env = {**os.environ, answer_cache.CACHE_DIR_ENV: str(cache)}
    writers = [subprocess.Popen([sys.executable, "-c", writer, str(n)], env=env) for n in (1000, 3000)]
    seen = []
    while any(process.poll() is None for process in writers):
        found, answer = answer_cache.read("ab" + "0" * 62)
        if found:
            seen.append(answer)
    assert [process.wait() for process in writers] == [0, 0]
    found, answer = answer_cache.read("ab" + "0" * 62)
    assert found and answer.size in (1000, 3000) and (answer == answer.size).all()
    assert all((a == a.size).all() and a.size in (1000, 3000) for a in seen)  # never a torn file


def test_the_folder_is_bounded_by_removing_the_least_recently_used(cache):
    for i in range(6):
        answer_cache.write(f"{i:02d}" + "0" * 62, np.zeros(1000))
        os.utime(answer_cache.path_of(f"{i:02d}" + "0" * 62), (i, i))
    answer_cache._bound_size(answer_cache.folder(), 3 * 8200)
    assert [answer_cache.read(f"{i:02d}" + "0" * 62)[0] for i in range(6)] == [False] * 3 + [True] * 3
