"""SciCode items and the sandbox that runs model-written code.

The SciCode tests need the nvidia-scicode wheel (fetched once by pip into the
user cache); they are skipped when it cannot be had.
"""

from __future__ import annotations

import textwrap

import pytest

from metacog.benchmarks import grade, sandbox

_SEALED, _WHY = sandbox.available()
sealed = pytest.mark.skipif(not _SEALED, reason=f"sealed sandbox unavailable here: {_WHY}")


def _scicode():
    from metacog.benchmarks import scicode

    try:
        scicode.package_dir()
    except (FileNotFoundError, OSError) as exc:  # offline and no cached wheel
        pytest.skip(f"nvidia-scicode wheel unavailable: {exc}")
    return scicode


# ---------------------------------------------------------------------------
# The sandbox on its own
# ---------------------------------------------------------------------------

@sealed
def test_sandbox_runs_code_in_a_separate_process():
    import os

    res = sandbox.run_code(f"import os\nprint(os.getpid() != {os.getpid()}, sum(range(10)))")
    assert res.ok and res.stdout.split() == ["True", "45"]


@sealed
def test_sandbox_infinite_loop_times_out():
    res = sandbox.run_code("while True:\n    pass\n", timeout=1.5)
    assert res.timed_out and not res.ok


@sealed
def test_sandbox_blocks_sockets():
    code = textwrap.dedent("""
        import socket
        try:
            socket.create_connection(("pypi.org", 443), timeout=3)
        except PermissionError as exc:
            print("blocked:", exc)
        s = socket.socket()
    """)
    res = sandbox.run_code(code)
    assert "blocked: network access is disabled" in res.stdout
    assert res.returncode != 0 and "PermissionError" in res.stderr


@sealed
def test_sandbox_network_namespace_even_without_the_guard():
    # A grandchild process does not inherit the socket guard, only the empty namespace.
    code = textwrap.dedent("""
        import subprocess, sys
        probe = "import socket; socket.create_connection(('1.1.1.1', 80), timeout=3)"
        done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
        print("rc", done.returncode)
        print(done.stderr.strip().splitlines()[-1])
    """)
    res = sandbox.run_code(code, timeout=20)
    assert res.ok, res.stderr
    assert "rc 1" in res.stdout and "unreachable" in res.stdout.lower()


@sealed
def test_sandbox_memory_limit_and_clean_env(monkeypatch):
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.invalid:3128")
    res = sandbox.run_code("bytearray(600 * 1024 * 1024)", memory_mb=256)
    assert res.returncode != 0 and "MemoryError" in res.stderr
    env = sandbox.run_code("import os; print(sorted(k for k in os.environ if 'proxy' in k.lower()))")
    assert env.stdout.strip() == "[]"


@sealed
def test_sandbox_workdir_files_and_outputs():
    res = sandbox.run_code("open('out.txt', 'w').write(open('in.txt').read().upper())",
                           files={"in.txt": b"abc"}, outputs=("out.txt", "missing.txt"))
    assert res.ok and res.outputs == {"out.txt": b"ABC"}
    with pytest.raises(ValueError, match="timeout must be positive"):
        sandbox.run_code("pass", timeout=0)


# ---------------------------------------------------------------------------
# SciCode
# ---------------------------------------------------------------------------

def test_scicode_sizes_and_decomposition():
    sc = _scicode()
    dev, test, both = sc.load_items(), sc.load_items("test"), sc.load_items("all")
    assert (len(dev), len(test), len(both)) == (50, 291, 341)
    assert len({it.meta["problem_id"] for it in dev}) == 15
    assert len({it.meta["problem_id"] for it in test}) == 65
    assert all(it.meta["gradable"] for it in dev) and not any(it.meta["gradable"] for it in test)
    assert sum(it.context_kind == "background" for it in dev) == 33
    first = dev[0]
    assert first.item_id == "scicode/10.1" and "def get_alpha(recvec, alpha_scaling=5):" in first.question
    assert first.context is None and first.context_kind == "none"  # 10.1 has no background
    later = [it for it in dev if it.item_id == "scicode/10.3"][0]
    assert len(later.meta["previous_code"]) == 2
    with pytest.raises(ValueError, match="split"):
        sc.load_items("train")


def test_extract_code():
    sc = _scicode()
    reply = "Here:\n```python\ndef helper():\n    pass\n```\nand\n```python\ndef get_alpha(x):\n    return 1\n```\n"
    assert sc.extract_code(reply, "def get_alpha(recvec):").startswith("def get_alpha")
    assert sc.extract_code("```\nx = 1\n```", "") == "x = 1\n"
    assert sc.extract_code("def f(): pass", "") == "def f(): pass"


@sealed
def test_scicode_reference_passes_and_wrong_code_fails():
    sc = _scicode()
    item = sc.load_items()[0]  # 10.1 get_alpha
    good = sc.run_tests(item, item.gold)
    assert good.passed and good.n_passed == good.n_tests == 4, good.describe()
    wrong = item.gold.replace("alpha = alpha_scaling *", "alpha = 2 * alpha_scaling *")
    assert wrong != item.gold
    bad = sc.run_tests(item, wrong)
    assert not bad.passed and bad.n_passed == 0 and "AssertionError" in bad.errors[0]
    # through the public grader, from a chatty reply with a fenced block
    assert grade("scicode", f"Sure.\n```python\n{item.gold}\n```", item) is True
    assert grade("scicode", "I don't know.", item) is False


@sealed
def test_scicode_candidate_loop_times_out_and_socket_fails():
    sc = _scicode()
    item = sc.load_items()[0]
    looping = "def get_alpha(recvec, alpha_scaling=5):\n    while True:\n        pass\n"
    res = sc.run_tests(item, looping, timeout=3)
    assert not res.passed and res.timed_out
    networked = textwrap.dedent("""
        import socket
        def get_alpha(recvec, alpha_scaling=5):
            socket.create_connection(("example.com", 80), timeout=2)
            return 0.0
    """)
    res = sc.run_tests(item, networked)
    assert not res.passed and all("PermissionError" in e for e in res.errors)


def test_scicode_ungradable_step_raises():
    sc = _scicode()
    item = sc.load_items("test")[0]
    with pytest.raises(ValueError, match="not gradable offline"):
        sc.run_tests(item, "pass")


#: A fixed handful of dev steps whose reference solutions the default run grades, one of each
#: kind of test: arrays compared with np.allclose after a background (51.2), a truth value
#: compared with ``== target`` (29.3), a problem's own comparison helper after five earlier
#: steps and no background (10.6 ``are_equivalent``, 70.6 ``cmp_tuple_or_list``), and tests
#: that are whole ``test_case_N()`` functions (78.2). Each takes a few seconds; the sweep over
#: all 50 steps (about 5 min) is ``make scicode-check``.
HANDFUL = ("scicode/10.6", "scicode/29.3", "scicode/51.2", "scicode/70.6", "scicode/78.2")


def _failed_references(items, sc) -> list[str]:
    return [r.describe() for r in (sc.run_tests(it, it.gold, timeout=300) for it in items) if not r.passed]


@sealed
def test_a_handful_of_dev_reference_solutions_pass():
    sc = _scicode()
    items = [it for it in sc.load_items() if it.item_id in HANDFUL]
    assert sorted(it.item_id for it in items) == sorted(HANDFUL)
    assert _failed_references(items, sc) == []


@sealed
@pytest.mark.slow
@pytest.mark.sweep
def test_every_dev_reference_solution_passes():
    """All 50 steps; left out of a plain pytest run (make scicode-check runs it)."""
    sc = _scicode()
    assert _failed_references(sc.load_items(), sc) == []
