"""SciCode test runner: executed ONLY inside the sealed sandbox (metacog.benchmarks.sandbox).

``python _scicode_runner.py MODE`` in the working folder:

- ``targets`` (untrusted side, reference code): run the reference program, then
  for each test evaluate the expression(s) its final assert compares with
  ``target``; write the values to ``targets.pkl`` (``None`` for a
  self-checking test).
- ``record`` (untrusted side, candidate code): run the candidate program and
  each test, with the final assert replaced by the evaluation of what it
  compares with ``target`` (the targets are never given to this process).
  Every top-level call of a function the candidate defined is recorded: its
  return value, encoded as plain data (:func:`encode`), or the exception it
  raised. Writes ``calls.json``. This is the candidate's only channel out.
- ``judge`` (trusted side, run by the sandbox as a separate process after the
  candidate's processes are gone): run the trusted part of the program (the
  dependencies and the reference code of the earlier steps), bind each
  candidate function to a replay of its recorded results, and run every test
  as written, with its ``target``; write ``verdict.json``. No candidate code
  runs here, so nothing the candidate does can reach the comparison.

Not imported by the package.
"""

import ast
import base64
import collections
import copy
import json
import pickle
import sys
import traceback

MAX_DEPTH = 64


# ---------------------------------------------------------------------------
# Plain-data codec (no code runs when decoding)
# ---------------------------------------------------------------------------

def encode(v, depth=0):
    """JSON-able form of numbers, strings, containers and numpy arrays; TypeError otherwise."""
    import numpy as np

    if depth > MAX_DEPTH:
        raise TypeError("value nested too deeply")
    if isinstance(v, np.ndarray):
        if v.dtype.kind == "O":
            return {"$ao": [encode(x, depth + 1) for x in v.ravel().tolist()], "shape": list(v.shape)}
        if v.dtype.kind not in "biufcSUmM":
            raise TypeError(f"cannot carry an array of dtype {v.dtype}")
        return {"$a": base64.b64encode(np.ascontiguousarray(v).tobytes()).decode(),
                "dtype": v.dtype.str, "shape": list(v.shape)}
    if isinstance(v, np.generic):
        return {"$g": encode(np.asarray(v), depth + 1)}
    if v is None or isinstance(v, (bool, str)):
        return v
    if isinstance(v, int):
        return {"$i": str(int(v))}
    if isinstance(v, float):
        return {"$f": repr(float(v))}
    if isinstance(v, complex):
        return {"$c": [repr(v.real), repr(v.imag)]}
    for kind, tag in ((list, "$l"), (tuple, "$t"), ((set, frozenset), "$s")):
        if isinstance(v, kind):
            return {tag: [encode(x, depth + 1) for x in v]}
    if isinstance(v, dict):
        return {"$d": [[encode(k, depth + 1), encode(x, depth + 1)] for k, x in v.items()]}
    if isinstance(v, bytes):
        return {"$b": base64.b64encode(v).decode()}
    raise TypeError(f"cannot carry a {type(v).__module__}.{type(v).__name__}")


def decode(v, depth=0):
    """Inverse of :func:`encode`; ValueError on anything it did not make."""
    import numpy as np

    if depth > MAX_DEPTH + 2:
        raise ValueError("value nested too deeply")
    if v is None or isinstance(v, (bool, str)):
        return v
    if not isinstance(v, dict) or len(v) > 3:
        raise ValueError(f"unexpected {type(v).__name__} in the recorded values")
    if "$i" in v:
        return int(v["$i"])
    if "$f" in v:
        return float(v["$f"])
    if "$c" in v:
        return complex(float(v["$c"][0]), float(v["$c"][1]))
    for tag, kind in (("$l", list), ("$t", tuple), ("$s", set)):
        if tag in v:
            return kind(decode(x, depth + 1) for x in v[tag])
    if "$d" in v:
        return {decode(k, depth + 1): decode(x, depth + 1) for k, x in v["$d"]}
    if "$b" in v:
        return base64.b64decode(v["$b"])
    if "$ao" in v:
        arr = np.empty(len(v["$ao"]), dtype=object)
        for i, x in enumerate(v["$ao"]):
            arr[i] = decode(x, depth + 1)
        return arr.reshape([int(n) for n in v["shape"]])
    if "$a" in v:
        dtype = np.dtype(str(v["dtype"]))
        if dtype.kind not in "biufcSUmM":
            raise ValueError(f"dtype {dtype} is not carried")
        raw = base64.b64decode(v["$a"])
        return np.frombuffer(raw, dtype=dtype).reshape([int(n) for n in v["shape"]]).copy()
    if "$g" in v:
        return decode(v["$g"], depth + 1)[()]
    raise ValueError(f"unknown tag {sorted(v)} in the recorded values")


# ---------------------------------------------------------------------------
# Test structure
# ---------------------------------------------------------------------------

def _target_key(node):
    """None for ``target``, k for ``target[k]``, False otherwise."""
    if isinstance(node, ast.Name) and node.id == "target":
        return None
    if (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name)
            and node.value.id == "target" and isinstance(node.slice, ast.Constant)):
        return node.slice.value
    return False


def _partners(test):
    """(key, partner expression) pairs: what each use of target is compared with."""
    pairs = []
    for node in ast.walk(test):
        if isinstance(node, ast.Call) and len(node.args) == 2:
            for j in (0, 1):
                key = _target_key(node.args[j])
                if key is not False:
                    pairs.append((key, node.args[1 - j]))
        elif isinstance(node, ast.Compare) and len(node.comparators) == 1:
            left, right = node.left, node.comparators[0]
            for a, b in ((left, right), (right, left)):
                key = _target_key(b)
                if key is not False:
                    pairs.append((key, a))
    return pairs


def _split(test_code):
    """(setup, final assert or None, rest): around the last top-level assert using target."""
    tree = ast.parse(test_code)
    for i in range(len(tree.body) - 1, -1, -1):
        node = tree.body[i]
        if isinstance(node, ast.Assert) and any(
                isinstance(n, ast.Name) and n.id == "target" for n in ast.walk(node)):
            return (ast.Module(body=tree.body[:i], type_ignores=[]), node,
                    ast.Module(body=tree.body[i + 1:], type_ignores=[]))
    return tree, None, ast.Module(body=[], type_ignores=[])


def candidate_names(code):
    """Names the candidate code binds at top level with def or assignment (imports excluded)."""
    names = []
    for node in ast.parse(code).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.append(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                names += [n.id for n in ast.walk(t) if isinstance(n, ast.Name)]
    return list(dict.fromkeys(names))


def _error(exc):
    return ("".join(traceback.format_exception_only(type(exc), exc)).strip() or type(exc).__name__)[-500:]


# ---------------------------------------------------------------------------
# The three modes
# ---------------------------------------------------------------------------

def _targets(program, tests):
    # As in SciCode's own harness, the tests of a step run in order in ONE
    # namespace (a later test may use a name an earlier one defined).
    ns = {"__name__": "__scicode__"}
    exec(compile(program, "<reference>", "exec"), ns)
    out = []
    for n, code in enumerate(tests):
        setup, node, rest = _split(code)
        if node is None:  # self-checking test: run it for its side effects on the namespace
            ns["target"] = None
            exec(compile(setup, f"<test {n}>", "exec"), ns)
            out.append(None)
            continue
        exec(compile(setup, f"<test {n}>", "exec"), ns)
        pairs = _partners(node.test)
        if not pairs:
            raise RuntimeError(f"test {n}: cannot find what target is compared with")
        values = {}
        for key, expr in pairs:
            values[key] = eval(compile(ast.Expression(expr), f"<test {n}>", "eval"), ns)
        if None in values:
            out.append(values[None])
        else:
            keys = sorted(values)
            out.append([values[k] for k in keys] if keys == list(range(len(keys))) else values)
        ns["target"] = out[-1]
        exec(compile(rest, f"<test {n}>", "exec"), ns)
    return out


def _record(program, candidate, tests):
    """Run the candidate; return what calls.json holds."""
    ns = {"__name__": "__scicode__"}
    try:
        names = candidate_names(candidate)
        exec(compile(program, "<candidate>", "exec"), ns)
    except BaseException as exc:  # noqa: BLE001 - any failure of the candidate is a failed step
        return {"program_error": _error(exc)}
    state = {"depth": 0, "log": []}

    def recorder(name, fn):
        def call(*args, **kwargs):
            if state["depth"]:
                return fn(*args, **kwargs)
            state["depth"] += 1
            try:
                value = fn(*args, **kwargs)
            except BaseException as exc:  # noqa: BLE001
                state["log"].append([name, {"$raise": _error(exc)}])
                raise
            finally:
                state["depth"] -= 1
            try:
                state["log"].append([name, encode(value)])
            except (TypeError, RecursionError) as exc:
                state["log"].append([name, {"$raise": f"unreadable return value: {exc}"}])
            return value
        return call

    consts = {}
    for name in names:
        if callable(ns.get(name)):
            ns[name] = recorder(name, ns[name])
        elif name in ns:
            try:
                consts[name] = encode(ns[name])
            except (TypeError, RecursionError):
                pass
    out = []
    for n, code in enumerate(tests):
        state["log"] = []
        error = ""
        try:
            setup, node, rest = _split(code)
            ns["target"] = None
            exec(compile(setup, f"<test {n}>", "exec"), ns)
            for _, expr in (_partners(node.test) if node is not None else []):
                eval(compile(ast.Expression(expr), f"<test {n}>", "eval"), ns)
            exec(compile(rest, f"<test {n}>", "exec"), ns)
        except BaseException as exc:  # noqa: BLE001
            error = _error(exc)
        out.append({"calls": state["log"], "error": error})
    return {"consts": consts, "tests": out}


class CandidateRaised(Exception):
    """The candidate's function raised this (recorded) error."""


def _judge(job, targets, calls):
    tests = job["tests"]
    if calls is None:
        return [{"passed": False, "error": "the candidate recorded no results"} for _ in tests]
    if "program_error" in calls:
        return [{"passed": False, "error": "program: " + str(calls["program_error"])[:500]} for _ in tests]
    ns = {"__name__": "__scicode__"}
    exec(compile(job["trusted_program"], "<trusted>", "exec"), ns)
    queue = collections.deque()

    def replay(name):
        def call(*args, **kwargs):
            if not queue:
                raise CandidateRaised(f"{name}: no recorded result for this call")
            got, value = queue.popleft()
            if got != name:
                raise CandidateRaised(f"{name}: calls differ from the recorded run ({got})")
            if isinstance(value, dict) and "$raise" in value:
                raise CandidateRaised(str(value["$raise"])[:500])
            return decode(value)
        return call

    consts = calls.get("consts") or {}
    for name in candidate_names(job["candidate"]):
        ns[name] = decode(consts[name]) if name in consts else replay(name)
    results = []
    recorded = calls.get("tests") or []
    for n, code in enumerate(tests):
        queue.clear()
        if n < len(recorded):
            queue.extend((str(a), b) for a, b in recorded[n].get("calls", []))
        ns["target"] = copy.deepcopy(targets[n]) if targets[n] is not None else None
        try:
            exec(compile(code, f"<test {n}>", "exec"), ns)
            results.append({"passed": True, "error": ""})
        except BaseException as exc:  # noqa: BLE001
            results.append({"passed": False, "error": _error(exc)})
    return results


def main():
    mode = sys.argv[1]
    if mode == "targets":
        with open("job.json") as fh:
            job = json.load(fh)
        values = _targets(job["program"], job["tests"])
        with open("targets.pkl", "wb") as fh:
            pickle.dump(values, fh)
    elif mode == "record":
        with open("job.json") as fh:
            job = json.load(fh)
        result = _record(job["program"], job["candidate"], job["tests"])
        with open("calls.json", "w") as fh:
            json.dump(result, fh)
    elif mode == "judge":
        import os

        for folder in filter(None, os.environ.get("METACOG_SANDBOX_PATH", "").split(os.pathsep)):
            sys.path.insert(0, folder)  # the read-only copy of the SciCode helpers
        with open("judge.json") as fh:
            job = json.load(fh)
        with open("targets.pkl", "rb") as fh:  # made by the reference run; never seen by the candidate
            targets = pickle.load(fh)
        try:
            with open("out/calls.json") as fh:
                calls = json.load(fh)
            if not isinstance(calls, dict):
                raise ValueError("calls.json is not an object")
        except (OSError, ValueError, RecursionError):
            calls = None
        try:
            results = _judge(job, targets, calls)
        except (ValueError, TypeError, RecursionError) as exc:
            results = [{"passed": False, "error": f"unreadable results: {_error(exc)}"} for _ in job["tests"]]
        with open("verdict.json", "w") as fh:
            json.dump({"tests": results}, fh)
    else:
        sys.exit(f"unknown mode {mode!r}")


if __name__ == "__main__":
    main()
