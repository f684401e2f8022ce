"""The HTTP side of the server backend: an OpenAI-compatible Completions client.

It asks ``POST {base_url}/completions`` for the log-probabilities of given text, the way
lm-evaluation-harness's ``local-completions`` and ``gguf`` backends do (``echo: true``,
``logprobs: N``, ``max_tokens: 1``, ``temperature: 0``), and reads the answer in the OpenAI
echo form or in vLLM's ``prompt_logprobs`` form (:func:`parse_choice`). Prompts go several to a
request (``prompts_per_request``; a server that takes one prompt per request, as
llama-cpp-python's, is found on the first request and then sent one at a time), at most
``concurrency`` requests at once, each with a ``timeout``; a failed request (no connection,
5xx, 429) is retried ``retries`` times with exponential backoff. Every failure ends as ONE
:class:`ServerError` line that names the server and the fix. Only the standard library is used
(urllib, a thread pool).

>>> Echo(("A", " dog"), (0, 1), (None, -2.5), (None, {" dog": -2.5})).text
'A dog'
>>> api_root("http://127.0.0.1:8000"), api_root("http://h:1/v1/")
('http://127.0.0.1:8000/v1', 'http://h:1/v1')
"""

from __future__ import annotations

import http.client
import json
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from probes.backends.server_checks import (
    BadAnswer,
    echo_lists,
    logprob,
    offsets_in_order,
    request_error,
    top,
)
from probes.engine.models import ModelError

MAX_ANSWER_BYTES = 64 << 20
"""The most bytes one answer may have (64 MiB). An echo of 8 prompts of 2,000 tokens with 20
top log-probabilities each is about 15 MB; a larger answer is refused as it streams in."""


class ServerError(ModelError):
    """The inference server cannot be used: unreachable, a model it does not serve, no prompt
    log-probabilities, a tokenizer that does not match, stopped in the middle of a run."""


class NoScoring(ServerError):
    """The server cannot score text: no ``/completions`` endpoint, or one that refuses the
    echo with log-probabilities or answers it without them. Loading then asks whether it
    answers ``/chat/completions`` (a chat-only server: probes.backends.server)."""


@dataclass(frozen=True)
class Echo:
    """One echoed prompt: its tokens (as text), their character offsets in the prompt, each
    token's log-probability (None where the server gives none, the first token) and the top
    log-probabilities at each position (None where not returned)."""

    tokens: tuple[str, ...]
    offsets: tuple[int, ...]
    logprobs: tuple[float | None, ...]
    top: tuple[dict[str, float] | None, ...]

    @property
    def text(self) -> str:
        return "".join(self.tokens)


def api_root(base_url: str) -> str:
    """The URL under which ``/completions`` and ``/models`` live: ``base_url`` with ``/v1``
    added when it has no path (``http://host:8000`` -> ``http://host:8000/v1``)."""
    url = base_url.rstrip("/")
    for suffix in ("/completions", "/chat/completions"):
        if url.endswith(suffix):
            url = url[: -len(suffix)]
    path = url.split("://", 1)[-1].partition("/")[2]
    return url if path else url + "/v1"


class CompletionsClient:
    """Talks to one OpenAI-compatible server. ``model``: the served name to ask for (None: the
    only model the server lists). ``api_key``: sent as a bearer token when given."""

    def __init__(self, base_url: str, *, model: str | None = None, timeout: float = 120.0,
                 retries: int = 3, concurrency: int = 4, prompts_per_request: int = 8,
                 api_key: str | None = None, backoff: float = 0.5,
                 max_bytes: int = MAX_ANSWER_BYTES) -> None:
        if concurrency < 1 or prompts_per_request < 1 or retries < 0 or timeout <= 0:
            raise ServerError("server options: num_concurrent and batch_size must be >= 1, "
                              "max_retries >= 0 and timeout > 0")
        self.root = api_root(base_url)
        self.model = model
        self.timeout, self.retries, self.backoff = float(timeout), int(retries), float(backoff)
        self.concurrency, self.per_request = int(concurrency), int(prompts_per_request)
        self.api_key = api_key
        self.max_bytes = int(max_bytes)
        self.requests_sent = 0
        self._lists_ok: bool | None = None  # does the server take a list of prompts?

    # --- plain HTTP ---------------------------------------------------------------------------

    def _http(self, method: str, path: str, body: dict[str, Any] | None = None,
              retry_5xx: bool = True) -> Any:
        """One call with retries; the parsed JSON answer, or a ServerError. ``retry_5xx``:
        False for a request whose form the server may refuse with a 500 (a list of prompts)."""
        data = json.dumps(body).encode("utf-8") if body is not None else None
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        last, answered = "", False
        for attempt in range(self.retries + 1):
            if attempt:
                time.sleep(self.backoff * 2 ** (attempt - 1))
            self.requests_sent += 1
            try:
                status, raw, location = self._once(method, self.root + path, data, headers,
                                                   self.timeout)
            except _Failed as e:
                last, answered = str(e), e.answered
                continue
            if 300 <= status < 400:
                raise ServerError(
                    f"the server at {self.root} answered {method} {path} with a redirect (HTTP "
                    f"{status} to {location or 'no address'}); kgprobe follows no redirect, so "
                    "the API key and the prompts never go to another address: give the address "
                    "it names as base_url if you trust it")
            if status >= 400:
                detail = _detail(raw)
                if retry_5xx and (status in (429, 502, 503, 504) or (
                        status >= 500 and not _refusal(detail))):
                    last, answered = f"HTTP {status}: {detail}", True
                    continue
                raise _HttpStatus(status, detail)
            try:
                return json.loads(raw.decode("utf-8"))
            except (UnicodeDecodeError, json.JSONDecodeError):
                raise ServerError(f"the server at {self.root} answered {path} with something "
                                  "that is not JSON; is base_url an OpenAI-compatible API "
                                  "(e.g. http://host:8000/v1)?") from None
        tries = f"{self.retries + 1} {'try' if self.retries == 0 else 'tries'}"
        if "no whole answer within" in last:
            raise ServerError(f"the inference server at {self.root} gave {method} {path} "
                              f"{last} ({tries}); the timeout bounds each request as a whole: "
                              "raise timeout= in --model-args or check the server, then run "
                              "the same command again (chunks already scored are kept)")
        if answered:
            raise ServerError(f"the inference server at {self.root} failed on {method} {path} "
                              f"({last}, {tries}); see its log, fix it and run the same "
                              "command again (chunks already scored are kept)")
        raise ServerError(f"cannot reach the inference server at {self.root} ({last}, "
                          f"{tries}); start it or fix base_url, then run the same command "
                          "again (chunks already scored are kept)")

    def _once(self, method: str, url: str, data: bytes | None, headers: dict[str, str],
              limit: float) -> tuple[int, bytes, str | None]:
        """One request: (status, body, Location). ``limit`` seconds bound all of it (connecting,
        sending, the headers and the body): the request runs on a daemon thread that is
        abandoned at the deadline and stops reading at its next block. No redirect is
        followed; a body over ``max_bytes`` is refused as it streams in."""
        box: dict[str, Any] = {}
        stop = threading.Event()

        def work() -> None:
            req = urllib.request.Request(url, data=data, headers=headers, method=method)
            try:
                with _OPENER.open(req, timeout=limit) as answer:
                    box["status"] = answer.status
                    box["body"] = _read(answer, self.max_bytes, stop)
            except urllib.error.HTTPError as e:  # an error status, or a redirect not followed
                box["status"], box["location"] = e.code, e.headers.get("Location")
                try:
                    box["body"] = _read(e, 1 << 16, stop, cut=True)
                except Exception:
                    box["body"] = b""
            except BaseException as e:  # handed to the caller's thread
                box["error"] = e

        worker = threading.Thread(target=work, daemon=True, name="kgprobe-server-request")
        worker.start()
        worker.join(limit)
        if worker.is_alive():
            stop.set()
            raise _Failed(f"no whole answer within timeout={limit:g} s", answered=False)
        error = box.get("error")
        if isinstance(error, _TooBig):
            raise ServerError(f"the server at {self.root} sent an answer over "
                              f"{self.max_bytes:,} bytes to {url[len(self.root):]}; kgprobe reads "
                              "no more (it would fill the memory): send fewer prompts per "
                              "request (batch_size=1) or fewer top log-probabilities") from None
        if isinstance(error, http.client.IncompleteRead):
            raise _Failed(f"the answer ended after {len(error.partial):,} bytes, before its "
                          "Content-Length", answered=True) from None
        if isinstance(error, (OSError, http.client.HTTPException)):
            reason = getattr(error, "reason", error)  # URLError wraps the socket's error
            if isinstance(reason, TimeoutError):
                raise _Failed(f"no whole answer within timeout={limit:g} s", answered=False)
            text = f"{type(reason).__name__}: {reason}" if str(reason) else type(reason).__name__
            raise _Failed(text, answered=isinstance(error, http.client.HTTPException))
        if error is not None:
            raise error
        return int(box["status"]), box.get("body", b""), box.get("location")

    def models(self) -> list[dict[str, Any]]:
        """The ``/models`` list the server reports (id and whatever else it says)."""
        try:
            answer = self._http("GET", "/models")
        except _HttpStatus as e:
            raise ServerError(f"the server at {self.root} has no /models ({e}); is base_url "
                              "an OpenAI-compatible API (e.g. http://host:8000/v1)?") from None
        data = answer.get("data") if isinstance(answer, dict) else None
        if not isinstance(data, list):
            raise ServerError(f"the server at {self.root} answered /models without a data "
                              "list; is base_url an OpenAI-compatible API?")
        return [m for m in data if isinstance(m, dict)]

    def get_optional(self, path: str, root: bool = False) -> Any:
        """GET a path that some servers have (``/props``, ``/get_model_info``); None when it
        fails. ``root``: relative to the server, not to the API root."""
        url = self.root.rsplit("/v1", 1)[0] if root else self.root
        try:  # no key sent, no redirect followed, the same bounds as every request
            status, raw, _ = self._once("GET", url + path, None, {}, min(self.timeout, 10.0))
            return json.loads(raw.decode("utf-8")) if status == 200 else None
        except Exception:  # an optional extra: its absence is normal
            return None

    # --- completions -------------------------------------------------------------------------

    def echo(self, texts: Sequence[str], top: int = 1,
             progress: Callable[[int], None] | None = None) -> list[Echo]:
        """Each text echoed with its tokens' log-probabilities (``echo``, ``max_tokens`` 1;
        the generated token is dropped)."""
        body = {"echo": True, "logprobs": max(1, top), "max_tokens": 1, "temperature": 0.0}
        choices = self._complete(list(texts), body, progress)
        return [parse_choice(c, text, self.root)
                for c, text in zip(choices, texts, strict=True)]

    def next_token(self, prompts: Sequence[str], n: int,
                   progress: Callable[[int], None] | None = None) -> list[dict[str, float]]:
        """The ``n`` most probable next tokens after each prompt (token text -> logprob)."""
        body = {"logprobs": n, "max_tokens": 1, "temperature": 0.0}
        out = []
        for c, prompt in zip(self._complete(list(prompts), body, progress), prompts,
                             strict=True):
            lp = c.get("logprobs") or {}
            tops = (lp.get("top_logprobs") if isinstance(lp, dict) else None) or [None]
            if not isinstance(tops, list) or not isinstance(tops[0], dict):
                raise ServerError(f"the server at {self.root} returns no top log-probabilities "
                                  "for the next token; top-k needs a Completions endpoint with "
                                  "logprobs (vLLM, SGLang, llama.cpp)")
            try:
                out.append(top(tops[0], "top_logprobs[0]") or {})
            except BadAnswer as e:
                raise ServerError(request_error(self.root, prompt, str(e))) from None
        return out

    def _complete(self, prompts: list[str], extra: dict[str, Any],
                  progress: Callable[[int], None] | None) -> list[dict[str, Any]]:
        if not prompts:
            return []
        if self._lists_ok is None and len(prompts) > 1 and self.per_request > 1:
            first = min(len(prompts), self.per_request)
            head = self._request_list(prompts[:first], extra)
            if progress:
                progress(first)
            return head + self._complete(prompts[first:], extra, progress)
        size = self.per_request if self._lists_ok else 1
        chunks = [prompts[i : i + size] for i in range(0, len(prompts), size)]
        results: list[list[dict[str, Any]]] = [[] for _ in chunks]

        def one(i: int) -> None:
            results[i] = self._request_list(chunks[i], extra)

        with ThreadPoolExecutor(max_workers=self.concurrency) as pool:
            futures = [pool.submit(one, i) for i in range(len(chunks))]
            for i, f in enumerate(futures):
                f.result()
                if progress:
                    progress(len(chunks[i]))
        return [c for r in results for c in r]

    def _request_list(self, prompts: list[str], extra: dict[str, Any]) -> list[dict[str, Any]]:
        """Choices for ``prompts``, in order; one request when the server takes a list."""
        if len(prompts) > 1 and self._lists_ok is not False:
            try:
                choices = self._post(prompts, extra)
                if len(choices) == len(prompts):
                    self._lists_ok = True
                    return choices
            except _HttpStatus:
                pass
            self._lists_ok = False  # one prompt per request from now on
        return [c for p in prompts for c in self._post(p, extra)]

    def _post(self, prompt: str | list[str], extra: dict[str, Any]) -> list[dict[str, Any]]:
        body: dict[str, Any] = {"prompt": prompt, **extra}
        if self.model:
            body["model"] = self.model
        try:
            answer = self._http("POST", "/completions", body,
                                retry_5xx=not (isinstance(prompt, list) and len(prompt) > 1))
        except _HttpStatus as e:
            if isinstance(prompt, list):
                raise
            raise self._explain(e) from None
        choices = answer.get("choices") if isinstance(answer, dict) else None
        if not isinstance(choices, list):
            raise ServerError(f"the server at {self.root} answered /completions without "
                              "choices; kgprobe needs an OpenAI-compatible Completions API")
        if not all(isinstance(c, dict) and isinstance(c.get("index", 0), int) for c in choices):
            raise ServerError(request_error(self.root, prompt if isinstance(prompt, str)
                                            else prompt[0], "choices that are not objects "
                                            "with a whole-number index"))
        if isinstance(prompt, str) and len(choices) != 1:
            raise ServerError(request_error(self.root, prompt, f"{len(choices)} choices for "
                                            "one prompt"))
        return sorted(choices, key=lambda c: int(c.get("index", 0)))

    def _explain(self, e: _HttpStatus) -> ServerError:
        low = e.detail.lower()
        if e.code == 404 and "model" in low:
            return ServerError(f"the server at {self.root} does not serve model "
                               f"{self.model!r} ({e.detail}); pass model= one it lists")
        if e.code in (404, 405):
            return NoScoring(f"the server at {self.root} has no Completions endpoint "
                             f"(/completions: HTTP {e.code}); a chat-only server returns no "
                             "prompt log-probabilities: serve the model with vLLM, SGLang or "
                             "llama.cpp's server, which offer /v1/completions")
        if "logprob" in low or "logits_all" in low:
            return NoScoring(f"the server at {self.root} returns no prompt log-probabilities "
                             f"({e.detail}); start it with log-probabilities on (llama-cpp-"
                               "python: --logits_all true; vLLM: --max-logprobs >= 1)")
        refused = NoScoring if e.code in (400, 422, 501) else ServerError
        return refused(f"the server at {self.root} refused a completion request "
                       f"(HTTP {e.code}: {e.detail})")


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Follow no redirect: the 3xx reaches the caller as an HTTPError (urllib would send the
    Authorization header and the prompts on to the address it names)."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


_OPENER = urllib.request.build_opener(_NoRedirect)


class _Failed(Exception):
    """One attempt that failed in a way a retry may fix; ``answered``: the server sent an HTTP
    answer (it was reached)."""

    def __init__(self, text: str, answered: bool) -> None:
        super().__init__(text)
        self.answered = answered


class _TooBig(Exception):
    """An answer over the size limit."""


def _read(answer: Any, limit: int, stop: threading.Event, cut: bool = False) -> bytes:
    """The body of ``answer``, read a block at a time (``read1``: what one socket read gives,
    so ``stop`` is seen between blocks), at most ``limit`` bytes: past that a _TooBig, or with
    ``cut`` the first ``limit`` bytes. A Content-Length over ``limit`` is refused before
    reading."""
    length = answer.headers.get("Content-Length") if answer.headers else None
    if not cut and length and length.strip().isdigit() and int(length) > limit:
        raise _TooBig()
    parts, size = [], 0
    read = getattr(answer, "read1", answer.read)
    while not stop.is_set():
        block = read(1 << 16)
        if not block:
            break
        size += len(block)
        if size > limit:
            if cut:
                parts.append(block[: limit - size + len(block)])
                break
            raise _TooBig()
        parts.append(block)
    left = getattr(answer, "length", None)  # http.client's count of promised bytes unread
    if not cut and not stop.is_set() and isinstance(left, int) and left > 0:
        raise http.client.IncompleteRead(b"".join(parts), left)
    return b"".join(parts)


class _HttpStatus(Exception):
    """A 4xx answer (or a 5xx that retrying cannot fix); turned into a ServerError."""

    def __init__(self, code: int, detail: str) -> None:
        super().__init__(f"HTTP {code}: {detail}")
        self.code, self.detail = code, detail


def _detail(body: bytes) -> str:
    """The server's own error text in an error answer's body (its JSON ``error.message`` or
    ``detail``, else the text), on one line, at most 300 characters."""
    raw = body.decode("utf-8", "replace")
    try:
        data = json.loads(raw)
        err = data.get("error", data.get("detail", data))
        msg = err.get("message", err) if isinstance(err, dict) else err
        return " ".join(str(msg).split())[:300]
    except (json.JSONDecodeError, AttributeError):
        return " ".join(raw.split())[:300]


def _refusal(detail: str) -> bool:
    """A 500 that is the server refusing the request (llama-cpp-python asserts one prompt per
    request, raises for logprobs without logits_all): retrying the same body cannot help.

    >>> _refusal("logprobs is not supported for models created with logits_all=False")
    True
    >>> _refusal("Internal Server Error")
    False
    """
    low = detail.lower()
    return any(w in low for w in ("assert", "logprob", "logits_all", "context window"))


def parse_choice(choice: dict[str, Any], text: str, root: str) -> Echo:
    """The echoed prompt part of one choice of a ``/completions`` answer for ``text``.

    Read, in this order: vLLM's ``prompt_logprobs`` with ``prompt_token_ids`` (the ids say which
    entry of each position is the prompt's token); the OpenAI echo form ``logprobs`` (``tokens``,
    ``text_offset``, ``token_logprobs``, ``top_logprobs``) of vLLM, SGLang and llama.cpp, where
    leading special tokens whose text the server counted in its offsets (vLLM decodes a BOS
    token as ``<s>``) are dropped and the offsets moved back onto the prompt; vLLM's
    ``prompt_logprobs`` with one entry per position (``prompt_logprobs: 0``). Tokens that start
    inside ``text`` are kept (the generated token is dropped).

    >>> c = {"logprobs": {"tokens": ["<s>", "A", " dog", "."], "text_offset": [0, 3, 4, 8],
    ...                   "token_logprobs": [None, -4.0, -2.0, -1.0], "top_logprobs": []}}
    >>> e = parse_choice(c, "A dog", "R"); e.tokens, e.offsets, e.logprobs
    (('A', ' dog'), (0, 1), (-4.0, -2.0))
    """
    lp = choice.get("logprobs")
    prompt_lp = choice.get("prompt_logprobs")
    ids = choice.get("prompt_token_ids")
    try:
        if isinstance(prompt_lp, list) and prompt_lp and isinstance(ids, list) \
                and len(ids) == len(prompt_lp):
            return _from_prompt_logprobs(prompt_lp, ids, text, root)
        if isinstance(lp, dict) and lp.get("tokens") and lp.get("text_offset") is not None:
            echo = _from_echo(lp, text)
            if echo is not None:
                return echo
    except BadAnswer as e:
        raise ServerError(request_error(root, text, str(e))) from None
    if isinstance(prompt_lp, list) and prompt_lp and all(
            p is None or (isinstance(p, dict) and len(p) == 1) for p in prompt_lp):
        try:
            return _from_prompt_logprobs(prompt_lp, None, text, root)
        except BadAnswer as e:
            raise ServerError(request_error(root, text, str(e))) from None
    if isinstance(prompt_lp, list) and prompt_lp:
        raise ServerError(f"the server at {root} returns prompt_logprobs without the prompt's "
                          "token ids or echoed offsets, so the prompt's own token at each "
                          "position is unknown; ask it with echo (or vLLM's return_token_ids)")
    raise NoScoring(f"the server at {root} returns no prompt log-probabilities (echo with "
                    "logprobs); a chat-only endpoint cannot score text: serve the model with "
                    "vLLM, SGLang or llama.cpp's server (llama-cpp-python: --logits_all true)")


def _from_echo(lp: dict[str, Any], text: str) -> Echo | None:
    """The prompt part of the OpenAI echo form, every value checked (server_checks); None when
    it holds no log-probability for the prompt (another form of the choice may)."""
    tokens, offsets, values, tops = echo_lists(lp)
    skip = _special_lead(tokens, offsets, text)
    shift = offsets[skip] if skip else 0
    offsets_in_order(tokens[skip:], [o - shift for o in offsets[skip:]])
    keep = [i for i in range(skip, len(tokens)) if offsets[i] - shift < len(text)]
    if not (len(keep) == 1 or (keep and any(values[i] is not None for i in keep[1:]))):
        return None
    end = offsets[keep[-1]] - shift + len(tokens[keep[-1]])
    if end < len(text):
        raise BadAnswer(f"tokens that end at character {end} of the {len(text)}-character "
                        "prompt (the echo does not cover the prompt)")
    return Echo(tuple(tokens[i] for i in keep), tuple(offsets[i] - shift for i in keep),
                tuple(logprob(values[i], f"token_logprobs[{i}]", allow_none=i == keep[0])
                      for i in keep),
                tuple(top(tops[i], f"top_logprobs[{i}]") if i < len(tops) else None
                      for i in keep))


def _special_lead(tokens: list[str], offsets: list[int], text: str) -> int:
    """How many leading echoed tokens are special tokens whose text is not in the prompt but
    counted in the offsets (vLLM: ``tokenizer.decode(bos)`` is ``<s>`` or
    ``<|begin_of_text|>``); 0 when the tokens spell the prompt from the start.

    >>> _special_lead(["<s>", "A", " dog"], [0, 3, 4], "A dog"), _special_lead(["A"], [0], "A")
    (1, 0)
    """
    if "".join(tokens).startswith(text):
        return 0
    for j in range(1, min(len(tokens), 4)):
        lead = "".join(tokens[:j])
        if lead and offsets[j] == len(lead) and "".join(tokens[j:]).startswith(text):
            return j
    return 0


def _from_prompt_logprobs(positions: list[Any], ids: list[Any] | None, text: str,
                          root: str) -> Echo:
    """An :class:`Echo` from vLLM's ``prompt_logprobs``: one entry per prompt token, None for
    the first, else ``{token id: {"logprob", "rank", "decoded_token"}}`` holding the prompt's
    token (``ids[i]``; the only entry when ``ids`` is None) and the top ones. The first token's
    text is what the later tokens leave of ``text`` (empty for a BOS token, which is dropped);
    offsets are the running sum of the texts, as vLLM's own echo computes them."""
    chosen: list[dict[str, Any] | None] = []
    for i, pos in enumerate(positions):
        if pos is None:
            chosen.append(None)
            continue
        entry = None
        if isinstance(pos, dict) and pos:
            entry = pos.get(str(ids[i])) if ids is not None else next(iter(pos.values()))
        if isinstance(entry, dict) and isinstance(entry.get("decoded_token"), str):
            logprob(entry.get("logprob"), f"prompt_logprobs[{i}]")  # a BadAnswer if not one
        if not isinstance(entry, dict) or not isinstance(entry.get("logprob"), (int, float)) \
                or not isinstance(entry.get("decoded_token"), str):
            raise ServerError(f"the server at {root} returns prompt_logprobs without the "
                              f"prompt's token (with its logprob and decoded_token) at position "
                              f"{i}; kgprobe reads vLLM's form {{id: {{logprob, rank, "
                              "decoded_token}}")
        chosen.append(entry)
    if any(e is None for e in chosen[1:]):
        raise ServerError(f"the server at {root} returns prompt_logprobs with a gap after the "
                          "first token; kgprobe needs one entry per prompt token")
    later = "".join(str(e["decoded_token"]) for e in chosen[1:] if e is not None)
    if not text.endswith(later):
        raise ServerError(f"the server at {root} returns prompt_logprobs whose tokens do not "
                          f"spell the prompt ({later[-40:]!r} is not the end of "
                          f"{text[-40:]!r}); kgprobe cannot place the tokens in the text")
    first = chosen[0]
    tokens = [text[: len(text) - len(later)]] + [str(e["decoded_token"]) for e in chosen[1:]
                                                  if e is not None]
    values = [None if e is None else float(e["logprob"]) for e in chosen]
    tops: list[dict[str, float] | None] = [
        None if not isinstance(p, dict) else
        {str(v.get("decoded_token")): float(logprob(v["logprob"], f"prompt_logprobs[{i}]")
                                            or 0.0)
         for v in p.values() if isinstance(v, dict) and "logprob" in v}
        for i, p in enumerate(positions)]
    offsets, at = [], 0
    for t in tokens:
        offsets.append(at)
        at += len(t)
    lead = 1 if tokens[0] == "" and len(tokens) > 1 and first is None else 0
    return Echo(tuple(tokens[lead:]), tuple(offsets[lead:]), tuple(values[lead:]),
                tuple(tops[lead:]))
