"""SciCode test runner: executed ONLY inside the sandbox (metacog.benchmarks.sandbox).

Reads ``job.pkl`` from the working directory:

- ``mode='targets'``: run the reference program, then for each test evaluate
  the expression(s) its final assert compares with ``target``, and write the
  values to ``targets.pkl`` (``None`` for a self-checking test);
- ``mode='check'``: run the candidate program, then each test with its
  ``target`` bound, and write ``result.json`` (per-test pass/fail and errors).

Not imported by the package; the parent process never unpickles anything this
script writes in check mode (results are JSON).
"""

import ast
import copy
import json
import pickle
import sys
import traceback


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


def _check(program, tests, targets):
    results = []
    ns = {"__name__": "__scicode__"}
    try:
        exec(compile(program, "<candidate>", "exec"), ns)
    except BaseException as exc:  # noqa: BLE001 - any failure of the candidate is a failed step
        err = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        return [{"passed": False, "error": "program: " + err} for _ in tests]
    for n, code in enumerate(tests):  # in order, in one namespace, as SciCode runs them
        ns["target"] = copy.deepcopy(targets[n]) if targets[n] is not None else None
        try:
            exec(compile(code, f"<test {n}>", "exec"), ns)
            results.append({"passed": True, "error": ""})
        except BaseException as exc:  # noqa: BLE001
            err = "".join(traceback.format_exception_only(type(exc), exc)).strip()
            results.append({"passed": False, "error": err[-500:] or type(exc).__name__})
    return results


def main():
    import os

    with open("job.pkl", "rb") as fh:
        job = pickle.load(fh)
    os.remove("job.pkl")  # the candidate cannot read the nonce from disk
    if job["mode"] == "targets":
        values = _targets(job["program"], job["tests"])
        with open("targets.pkl", "wb") as fh:
            pickle.dump(values, fh)
    elif job["mode"] == "check":
        targets = pickle.loads(job["targets"])
        results = _check(job["program"], job["tests"], targets)
        with open("result.json", "w") as fh:
            json.dump({"nonce": job["nonce"], "tests": results}, fh)
    else:
        sys.exit(f"unknown mode {job['mode']!r}")


if __name__ == "__main__":
    main()
