"""A planted-truth panel of models, served as an OpenAI-compatible chat server on 127.0.0.1.

:class:`PlantedPanel` plays ``n_models`` models (served as ``planted-00``, ``planted-01``, ...)
that answer the project's own prompts (:mod:`metacog.elicit.prompts`) on the project's own
items (:func:`metacog.benchmarks.load_items`), from the latent model of the book's simulator,
:func:`metacog.power.simulate.population`: a difficulty shared by every model, a per-model
ability and judgment threshold, a model-specific item effect ``u``, and ``kappa``, each model's
private signal about its own ``u`` (0: confidence follows the shared difficulty only, rank one,
no individual metacognition).

What each probe gets, for model ``j`` on item ``i`` (``z``, ``c*`` and ``t_j`` as in
:mod:`metacog.power.simulate`):

- ``answer_no_context``: correct iff ``z_ij > 0`` (the population's ``correct``);
- ``answer`` (the context shown): correct iff ``z_ij + context_gain > 0`` (the same as without
  it on an item that has no context);
- ``prospective`` and ``counterfactual``: "Yes" iff ``c*_ij > t_j`` (the population's
  ``confidence``), the first-token P(Yes) ``Phi(c*_ij - t_j)`` (kept within 0.01..0.99) when log
  probabilities are asked for; the counterfactual is the same latent judgment, asked after a
  correct answer;
- ``c0``: the gold yes/no iff ``z_ij > 0``, else the other one, with a stated
  P(correct) ``0.51 + 0.48 Phi(c*_ij - t_j)`` to two decimals (so wrong answers can be confident:
  with ``kappa = 0`` confidence knows only the shared difficulty); ``c1`` and ``c2`` give the same
  answer and confidence but abstain when the confidence is below ``c1_cut`` / ``c2_cut``.

Each benchmark's latent rows come from one ``population`` draw over all of that benchmark's items
(sorted by id, seeded by the panel's seed and the benchmark's name, with the panel's abilities
and thresholds), so a (model, item)'s planted values do not depend on which items a client
asks about. Items whose question text another item shares (in the same benchmark or another one the panel
covers: MMLU-Pro and MATH share some) render the same context-free prompts, so a client cannot
tell them apart: they take the planted values of the first of them (benchmarks in the panel's
order, ids sorted), which answers for them, and :meth:`PlantedPanel.truth` flags the others
``ambiguous``.

:class:`PlantedServer` serves ``PlantedPanel.answer`` over HTTP (a thin layer: any server that
maps an OpenAI request body to a reply body can serve the panel). Standalone:
``python tests/planted.py --models 8 --kappa 0 --port 0`` prints ``PORT <n>``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import re
import socket
import string
import sys
import threading
from functools import lru_cache
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pandas as pd

from metacog.benchmarks import PAPER_BENCHMARKS, load_items
from metacog.elicit import prompts
from metacog.power.simulate import population

#: Paper 1's benchmarks without SciCode (graded only in a sandbox), and paper 2's audit set.
DEFAULT_BENCHMARKS = tuple(b for b in PAPER_BENCHMARKS if b != "scicode") + ("audit",)
#: The probes the panel answers (the code templates of SciCode are not among them).
PROBES = ("prospective", "answer_no_context", "answer", "counterfactual", "c0", "c1", "c2")
_TOKEN = re.compile(r"\s*\S+|\s+")


def _stable_seed(*parts) -> int:
    return int.from_bytes(hashlib.sha256(":".join(map(str, parts)).encode()).digest()[:4], "little")


def _pattern(t: prompts.Template) -> re.Pattern:
    """A regex that a message rendered from ``t`` matches in full, one group per field."""
    out, seen = [], set()
    for literal, name, _, _ in string.Formatter().parse(t.user.strip()):
        out.append(re.escape(literal))
        if name:
            out.append(f"(?P={name})" if name in seen else f"(?P<{name}>.*?)")
            seen.add(name)
    return re.compile("".join(out), re.DOTALL)


@lru_cache(maxsize=None)
def _templates() -> tuple:
    return tuple((p, prompts.get(p), _pattern(prompts.get(p))) for p in PROBES)


def _error(message: str, kind: str = "invalid_request_error") -> dict:
    return {"error": {"message": message, "type": kind, "param": None, "code": None}}


def status_of(doc: dict) -> int:
    """The HTTP status for a reply of :meth:`PlantedPanel.answer`: 200, 404 (unknown model) or 400."""
    if "error" not in doc:
        return 200
    return 404 if doc["error"].get("type") == "not_found_error" else 400


def _logprobs(content: str, decision: str, p_yes: float | None) -> dict:
    """OpenAI-style ``logprobs`` for ``content``: the decision token carries P(Yes) and P(No)."""
    items = []
    for tok in _TOKEN.findall(content):
        if p_yes is not None and tok.strip() == decision and decision in ("Yes", "No"):
            top = [{"token": " Yes", "logprob": math.log(p_yes), "bytes": None},
                   {"token": " No", "logprob": math.log(1 - p_yes), "bytes": None}]
            lp = top[0]["logprob"] if decision == "Yes" else top[1]["logprob"]
            items.append({"token": tok, "logprob": lp, "bytes": None, "top_logprobs": top})
        else:
            items.append({"token": tok, "logprob": -0.05, "bytes": None, "top_logprobs": []})
    return {"content": items}


class PlantedPanel:
    """``n_models`` simulated models with a known latent structure (see the module docstring).

    ``sim`` goes to :func:`metacog.power.simulate.population` (``lam``, ``sigma_e``,
    ``ability_mean``, ...). ``answer(body)`` replies to an OpenAI chat request body;
    ``truth(benchmark, item_ids)`` is the planted table to compare a run's rows with.
    """

    def __init__(self, n_models: int = 8, kappa: float = 0.0, seed: int = 0,
                 benchmarks=DEFAULT_BENCHMARKS, *, context_gain: float = 1.0, c1_cut: float = 0.6,
                 c2_cut: float = 0.7, name: str = "planted", **sim):
        base = population(n_models, 2, kappa, seed, **sim)  # the models' abilities and thresholds
        self.n_models, self.kappa, self.seed, self.sim = int(n_models), float(kappa), seed, dict(sim)
        self.ability, self.thresholds = base.ability.to_numpy(), base.thresholds.to_numpy()
        self.params = dict(base.params)
        self.context_gain, self.c1_cut, self.c2_cut = context_gain, c1_cut, c2_cut
        self.models = [f"{name}-{j:02d}" for j in range(self.n_models)]
        self._index = {m: j for j, m in enumerate(self.models)}
        self.benchmarks = tuple(benchmarks)
        self.items, self._latent, self._by_question, self._canonical = {}, {}, {}, {}
        for b in self.benchmarks:
            self._load(b)
        self.requests = 0  # replies given (counted under a lock: the server answers from many threads)
        self._count = threading.Lock()
        self._plantable: dict = {}

    # -- the planted structure ------------------------------------------------------------
    def _load(self, bench: str) -> None:
        items = sorted(load_items(bench), key=lambda it: str(it.item_id))
        self.items[bench] = {it.item_id: it for it in items}
        pop = population(self.n_models, len(items), self.kappa, _stable_seed(self.seed, bench),
                         ability=self.ability, thresholds=self.thresholds, keep_latent=True, **self.sim)
        z, c_star = pop.latent["z"], pop.latent["c_star"]
        pos = {it.item_id: i for i, it in enumerate(items)}
        self._latent[bench] = (pos, z, c_star)
        for it in items:  # the first item (benchmarks in order, ids sorted) with a question text answers for it
            q = str(it.question).strip()
            head = self._by_question.get(q, [it])[0]
            self._canonical[(bench, it.item_id)] = (head.benchmark, head.item_id)
            self._by_question.setdefault(q, []).append(it)

    def planted(self, bench: str, item_id: str, j: int) -> dict:
        """Model ``j``'s planted values on one item: z, c*, and what each probe gets."""
        head_bench, head_id = self._canonical[(bench, item_id)]
        pos, z, c_star = self._latent[head_bench]
        i = pos[head_id]
        it = self.items[bench][item_id]
        zz, gap = float(z[i, j]), float(c_star[i, j] - self.thresholds[j])
        has_context = bool((it.context or "").strip())
        phi = 0.5 * (1.0 + math.erf(gap / math.sqrt(2.0)))  # Phi(c* - t)
        conf = round(0.51 + 0.48 * phi, 2)
        return {"z": zz, "c_star": float(c_star[i, j]), "correct": zz > 0,
                "correct_context": zz + (self.context_gain if has_context else 0.0) > 0,
                "judgment": gap > 0, "p_yes": min(max(phi, 0.01), 0.99), "confidence": conf}

    # -- replies ---------------------------------------------------------------------------
    def _attempt(self, it, probe: str, correct: bool) -> str:
        """The answer text: the gold (graded correct) or a wrong answer (graded wrong)."""
        b, gold = it.benchmark, it.gold
        if b == "mmlu_pro":
            opts, k = it.meta["options"], int(it.meta["answer_index"])
            pick = k if correct else self._wrong_option(opts, k)
            return "ABCDEFGHIJKLMNOP"[pick] if probe == "answer" else str(opts[pick]).strip()
        if b == "squad":
            return str(gold[0] if isinstance(gold, (list, tuple)) else gold) if correct else "zxqv unknowable"
        if b in ("math", "omni_math", "math500"):
            return f"$\\boxed{{{gold}}}$" if correct else f"$\\boxed{{{self._wrong_number(gold)}}}$"
        if b == "legalbench":
            if correct:
                return str(gold)
            others = [str(x) for x in it.meta.get("labels") or [] if str(x).lower() != str(gold).lower()]
            return others[0] if others and len(others) == len(it.meta["labels"]) - 1 else "zxqv unknowable"
        if isinstance(gold, str) and gold.lower() in ("yes", "no"):
            yes = (gold.lower() == "yes") == correct
            return "Yes" if yes else "No"
        return str(gold) if correct else "zxqv unknowable"

    @staticmethod
    def _wrong_option(opts, k: int) -> int:
        """An option whose text neither is nor contains nor is contained in the gold option's."""
        from metacog.benchmarks.grading import normalize_answer

        g = normalize_answer(str(opts[k]))
        for d in range(1, len(opts)):
            o = normalize_answer(str(opts[(k + d) % len(opts)]))
            if o and o != g and o not in g and g not in o:
                return (k + d) % len(opts)
        return (k + 1) % len(opts)

    @staticmethod
    def _wrong_number(gold) -> str:
        g = str(gold).strip()
        if re.fullmatch(r"-?\d+", g):
            return str(int(g) + 1)
        try:
            return repr(float(g) + 1)
        except ValueError:
            return "-98765"

    def _reply(self, probe: str, it, j: int) -> tuple[str, str, float | None]:
        """(content, decision token, P(Yes) at it) of model ``j`` for ``probe`` on ``it``."""
        v = self.planted(it.benchmark, it.item_id, j)
        if probe in ("answer", "answer_no_context"):
            ok = v["correct_context"] if probe == "answer" else v["correct"]
            return f"Let me think.\nFinal answer: {self._attempt(it, probe, ok)}", "", None
        if probe in ("prospective", "counterfactual"):
            word = "Yes" if v["judgment"] else "No"
            return f"I weigh what I know about this topic.\nFinal answer: {word}", word, v["p_yes"]
        word = self._attempt(it, "answer_no_context", v["correct"])
        conf = v["confidence"]
        cut = {"c1": self.c1_cut, "c2": self.c2_cut}.get(probe)
        if cut is not None and conf < cut:
            word = "Abstain"
        lead = "The evidence may be incomplete; the opposite case is weaker.\n" if probe == "c2" else ""
        p = None if word == "Abstain" else (conf if word == "Yes" else 1 - conf)
        return f"{lead}Final answer: {word}\nConfidence: {conf:.2f}", word, p

    def identify(self, messages: list) -> tuple[str, object]:
        """(probe, item) of a request's messages; ValueError when they are none of the panel's."""
        msgs = [m for m in messages if isinstance(m, dict)]
        user = next((str(m.get("content", "")) for m in reversed(msgs) if m.get("role") == "user"), "")
        found = []
        for probe, t, pat in _templates():
            m = pat.fullmatch(user.strip())
            if m is None:
                continue
            q = m.group("question").strip()
            for it in self._by_question.get(q, []):
                extra = {"own_answer": m.group("own_answer")} if "own_answer" in t.fields() else {}
                if t.render(it, **extra) == msgs:
                    found.append((probe, it))
        if not found:
            raise ValueError("the messages are not one of the project's prompts on an item the panel covers "
                             f"(benchmarks {list(self.benchmarks)})")
        # an item without context renders 'answer' as 'answer_no_context' (the same planted value);
        # items sharing a question text render the same context-free prompts: the first answers
        found.sort(key=lambda f: (f[0] != "answer_no_context",
                                  self._canonical[(f[1].benchmark, f[1].item_id)] != (f[1].benchmark, f[1].item_id)))
        return found[0]

    def answer(self, body: dict) -> dict:
        """An OpenAI chat.completion reply to the request ``body`` (an error body for an unknown
        model or an unrecognised prompt; :func:`status_of` gives its HTTP status)."""
        with self._count:
            self.requests += 1
        model = str(body.get("model", ""))
        j = self._index.get(model.split("/", 1)[-1] if model not in self._index else model)
        if j is None:
            return _error(f"model {model!r} is not served here; served: {self.models[0]} .. "
                          f"{self.models[-1]}", "not_found_error")
        try:
            probe, it = self.identify(body.get("messages") or [])
        except ValueError as exc:
            return _error(f"planted panel: {exc}")
        content, word, p_yes = self._reply(probe, it, j)
        want = bool(body.get("logprobs"))
        n_prompt = sum(len(str(m.get("content", ""))) for m in body.get("messages") or []) // 4
        h = hashlib.sha256(json.dumps([model, body.get("messages")], sort_keys=True).encode()).hexdigest()[:16]
        return {"id": f"chatcmpl-planted-{h}", "object": "chat.completion", "created": 1700000000,
                "model": self.models[j],
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": content},
                             "logprobs": _logprobs(content, word, p_yes) if want else None}],
                "usage": {"prompt_tokens": n_prompt, "completion_tokens": len(content) // 4,
                          "total_tokens": n_prompt + len(content) // 4}}

    # -- the truth to compare with ---------------------------------------------------------
    def plantable(self, benchmark: str, item_id: str) -> bool:
        """Whether the project's grader (:func:`metacog.elicit.rows.default_grader`) scores this
        item's planted attempts as planted: the gold correct and the wrong answer wrong, with the
        context and without. Call it from the main thread (math-verify's timeouts need it)."""
        key = (benchmark, item_id)
        if key not in self._plantable:
            from metacog.elicit.rows import default_grader

            it = self.items[benchmark][item_id]
            self._plantable[key] = all(
                default_grader(it, f"Let me think.\nFinal answer: {self._attempt(it, probe, ok)}", probe) == float(ok)
                for probe in ("answer", "answer_no_context") for ok in (True, False))
        return self._plantable[key]

    def truth(self, benchmark: str, item_ids=None, probes=PROBES, prefix: str = "openai/",
              check: bool = True) -> pd.DataFrame:
        """The planted values, one row per model x item x probe, named as a run's rows are
        (``model`` is ``prefix`` + the served name): ``correct`` (answers; for judgments the same
        model's correctness without the context, as :func:`metacog.elicit.run` scores them; for
        c0/c1/c2 whether the yes/no answer is right, missing when abstaining), ``decision``
        ('yes'/'no'/'abstain' for judgments, the answer text for attempts), ``confidence``
        (1/0 for judgments, the stated P(correct) for c0/c1/c2), ``p_yes``, ``ambiguous`` (the
        item's question text is shared: answered as the first such item), ``plantable``
        (:meth:`plantable`; None with ``check=False``) and the latent ``z``
        and ``c_star``. Counterfactual rows exist only where the answer with the context is correct."""
        ids = list(self.items[benchmark]) if item_ids is None else list(item_ids)
        rows = []
        for j, m in enumerate(self.models):
            for iid in ids:
                it = self.items[benchmark][iid]
                v = self.planted(benchmark, iid, j)
                amb = self._canonical[(benchmark, iid)] != (benchmark, iid)
                ok = self.plantable(benchmark, iid) if check else None
                for probe in probes:
                    if probe == "counterfactual" and not v["correct_context"]:
                        continue
                    content, word, p = self._reply(probe, it, j)
                    r = {"model": prefix + m, "benchmark": benchmark, "item_id": iid, "probe": probe,
                         "ambiguous": amb, "plantable": ok, "z": v["z"], "c_star": v["c_star"], "p_yes": p}
                    if probe in ("answer", "answer_no_context"):
                        r.update(decision=content.rsplit("Final answer: ", 1)[1], confidence=np.nan,
                                 correct=float(v["correct_context"] if probe == "answer" else v["correct"]))
                    elif probe in ("prospective", "counterfactual"):
                        r.update(decision=word.lower(), confidence=float(v["judgment"]), correct=float(v["correct"]))
                    else:
                        r.update(decision=word.lower(), confidence=v["confidence"],
                                 correct=np.nan if word == "Abstain" else float(v["correct"]))
                    rows.append(r)
        return pd.DataFrame(rows)

    def summary(self) -> pd.DataFrame:
        """The panel's models with their planted ability and threshold, and its kappa."""
        return pd.DataFrame({"model": self.models, "ability": self.ability, "threshold": self.thresholds,
                             "kappa": self.kappa})


class PlantedServer:
    """Serve ``panel.answer`` on 127.0.0.1 in a background thread (``POST /v1/chat/completions``,
    ``GET /v1/models``): ``with PlantedServer(panel) as srv: srv.base_url``."""

    def __init__(self, panel: PlantedPanel, port: int = 0):
        self.panel, self.port = panel, port
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> "PlantedServer":
        panel = self.panel

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self):
                super().setup()
                self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # no 40 ms stalls

            def _send(self, status: int, doc: dict) -> None:
                data = json.dumps(doc).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):  # noqa: N802
                if self.path.rstrip("/").endswith("/models"):
                    return self._send(200, {"object": "list", "data": [{"id": m, "object": "model"}
                                                                       for m in panel.models]})
                self._send(404, _error(f"no route GET {self.path}", "not_found_error"))

            def do_POST(self):  # noqa: N802
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    return self._send(404, _error(f"no route POST {self.path}", "not_found_error"))
                try:
                    body = json.loads(raw)
                except json.JSONDecodeError:
                    return self._send(400, _error("the request body is not JSON"))
                doc = panel.answer(body)
                self._send(status_of(doc), doc)

            def log_message(self, *args):  # quiet
                pass

        class Server(ThreadingHTTPServer):
            request_queue_size = 512  # the default 5 drops connections a busy client opens at once
            daemon_threads = True

        self._httpd = Server(("127.0.0.1", self.port), Handler)
        self.port = self._httpd.server_address[1]
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True, name="planted")
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._thread.join(5)
            self._httpd = None

    def __enter__(self) -> "PlantedServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", type=int, default=8)
    ap.add_argument("--kappa", type=float, default=0.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--benchmarks", default=",".join(DEFAULT_BENCHMARKS))
    a = ap.parse_args(argv)
    panel = PlantedPanel(a.models, a.kappa, a.seed, [b for b in a.benchmarks.split(",") if b])
    srv = PlantedServer(panel, port=a.port).start()
    print(f"PORT {srv.port}", flush=True)
    try:
        threading.Event().wait()  # until interrupted (Ctrl-C) or terminated
    except KeyboardInterrupt:
        pass
    finally:
        srv.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
