"""Provider kind ``llama_cpp``: in-process inference with ``llama-cpp-python`` (extra ``local``).

The model loads on first use, in a single worker thread that then runs every generation, so the
event loop never blocks and the llama context is only ever touched by one thread. Tokens stream
back through the loop one by one. The prompt cache is the llama context itself: each call
re-evaluates only the tokens after the longest prefix it shares with the previous call, so the
turns of a session cost only their new tokens. The system prompt's tokens are also kept on
disk (``openheim.providers.llama_prefix``), so a new provider or process skips them too.
Cancelling stops generation after at most one more token. llama.cpp's OpenMP threads wait
passively (``OMP_WAIT_POLICY=PASSIVE`` unless the environment sets a policy): spinning, they
made generation about ten times slower on a machine whose cores were busy with other work.
With an envelope schema on the request, decoding is constrained by a grammar so every reply
parses; a started answer that lists a folder is held to the listing's names
(``openheim.providers.llama_grammars``).
"""

from __future__ import annotations

import asyncio
import codecs
import json
import logging
import os
import threading
import time
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from openheim.errors import ConfigError, ContextOverflow, ProviderError
from openheim.events import TextDelta
from openheim.formats.regex import utf8
from openheim.messages import FinishReason, Message, TextBlock, ThinkingBlock, Usage
from openheim.providers.base import (
    ModelRequest,
    ModelResponse,
    ProviderSettings,
    StreamItem,
    closing_stream,
)
from openheim.providers.llama_grammars import request_grammar
from openheim.providers.llama_prefix import Outcome, PrefixCache
from openheim.providers.local_models import (
    default_threads,
    find_model,
    fitting_context,
)

if TYPE_CHECKING:
    from llama_cpp import Llama
    from llama_cpp.llama_grammar import LlamaGrammar

log = logging.getLogger(__name__)

INSTALL_HINT = "install the local extra: pip install 'openheim[local]'"
MODEL_HINT = "point model_path at a .gguf model file, or add one with `openheim models add`"
DEFAULT_MAX_TOKENS = 2048
DEFAULT_TEMPERATURE = 0.2
SAMPLING: dict[str, float] = {"top_k": 40, "top_p": 0.95, "min_p": 0.05, "repeat_penalty": 1.0}
"""No repeat penalty: an answer from a tool result copies names and words from it, and a
penalty on recent tokens made a small model skip or alter exactly those (a 12-entry listing
answered with 7 names, then made-up ones). Loops are the repetition guard's to stop
(``openheim.providers.repetition``)."""


def create(settings: ProviderSettings, http_client: object | None = None) -> LlamaCppProvider:
    """The registry's factory; ``http_client`` is unused (nothing goes over the network)."""
    return LlamaCppProvider(settings)


def checked_context(path: Path) -> int:
    """The context size that fits ``path`` (see ``fitting_context``), read from its header; a
    ConfigError when the file is not a GGUF model, instead of a crash inside llama.cpp."""
    try:
        return fitting_context(path)
    except ValueError as err:
        raise ConfigError(str(err), hint=MODEL_HINT) from None
    except OSError as err:
        raise ConfigError(f"cannot read {path}: {err.strerror or err}", hint=MODEL_HINT) from None


@dataclass
class GenerationStats:
    """What the last call did, from llama.cpp's own counters (for tests and benchmarks)."""

    prompt_tokens: int = 0
    evaluated_prompt_tokens: int = 0
    generated_tokens: int = 0
    tokens_after_cancel: int = 0
    prefix_tokens: int = 0
    """Tokens of the shared prefix (the system prompt) at the start of the prompt."""
    prefix_cache: Outcome = "off"
    prompt_ms: float = 0.0
    """llama.cpp's time evaluating the prompt (the prefix too, when it was evaluated)."""
    generation_ms: float = 0.0
    """llama.cpp's time evaluating generated tokens (sampling and grammar not included)."""


class LlamaCppProvider:
    """A Provider that runs a GGUF model in this process."""

    def __init__(self, settings: ProviderSettings) -> None:
        self.name = settings.name
        self.settings = settings
        self.stats = GenerationStats()
        self._llm: Llama | None = None
        self._cache: PrefixCache | None = None
        self._lock = asyncio.Lock()
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="llama.cpp")

    async def aclose(self) -> None:
        self._executor.shutdown(wait=True)
        self._llm = None

    def forget_prompt_cache(self) -> None:
        """Make the next call evaluate its whole prompt again (for fair measurements)."""
        if self._llm is not None:
            self._llm.reset()  # type: ignore[no-untyped-call]

    def model_path(self) -> Path:
        path = find_model(self.settings.model_path or self.settings.model, self.settings.data_dir)
        if path is None:
            wanted = self.settings.model_path or self.settings.model
            raise ConfigError(
                f"no local GGUF model {wanted!r} found",
                hint="set model_path to a .gguf file, add one with `openheim models add`, or "
                f"{INSTALL_HINT} for the built-in SmolLM2",
            )
        return path

    def _load(self) -> Llama:
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # read when llama.cpp first loads
        try:
            from llama_cpp import Llama
        except ImportError:
            raise ConfigError("llama-cpp-python is not installed", hint=INSTALL_HINT) from None
        path = self.model_path()
        fitting = checked_context(path)  # also when n_ctx is set: it proves the file is GGUF
        n_ctx = self.settings.n_ctx or fitting
        folder = self.settings.data_dir / "cache" / "llama"
        limit = self.settings.prefix_cache_mb * 1024 * 1024
        self._cache = PrefixCache.for_model(folder, path, n_ctx, limit)
        try:
            return Llama(
                model_path=str(path),
                n_ctx=n_ctx,
                n_threads=self.settings.n_threads or default_threads(),
                seed=self.settings.seed if self.settings.seed is not None else 0,
                verbose=False,
            )
        except ValueError as err:  # llama.cpp's only report of a file it cannot load
            raise ConfigError(f"llama.cpp cannot load {path}: {err}", hint=MODEL_HINT) from None

    async def _model(self) -> Llama:
        if self._llm is None:
            loop = asyncio.get_running_loop()
            self._llm = await loop.run_in_executor(self._executor, self._load)
        return self._llm

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamItem]:
        async with self._lock:
            llm = await self._model()
            tokens, stop = _prompt_tokens(llm, request)
            if len(tokens) >= llm.n_ctx():
                raise ContextOverflow(
                    f"the prompt needs {len(tokens)} tokens but the context holds {llm.n_ctx()}",
                    hint="start a new session, or raise n_ctx for this provider",
                    provider=self.name,
                )
            budget = min(
                request.max_tokens or self.settings.max_tokens or 2048, llm.n_ctx() - len(tokens)
            )
            run = _Generation(llm, tokens, stop, budget, self._sampling(request))
            run.grammar = request_grammar(request)
            run.prefix = _prefix(llm, request, tokens)
            run.cache = self._cache
            self.stats = run.stats  # counts as it goes, also for a call closed early
            pieces: list[str] = []
            started = time.perf_counter()
            async with closing_stream(self._run(run)) as generated:  # closed early: stop it
                async for piece in generated:
                    pieces.append(piece)
                    yield TextDelta(piece)
            _log_stats(run.stats, time.perf_counter() - started)
            text = "".join(pieces)
            usage = Usage(
                input_tokens=run.stats.evaluated_prompt_tokens,
                output_tokens=run.stats.generated_tokens,
                cache_read_tokens=len(tokens) - run.stats.evaluated_prompt_tokens,
            )
            finish: FinishReason = "max_tokens" if run.hit_limit else "end_turn"
            blocks = (TextBlock(text),) if text else ()
            yield ModelResponse(Message("assistant", blocks), finish, usage, request.model, finish)

    def _sampling(self, request: ModelRequest) -> dict[str, float]:
        temperature = request.temperature
        if temperature is None:
            temperature = self.settings.temperature
        return {**SAMPLING, "temp": DEFAULT_TEMPERATURE if temperature is None else temperature}

    async def _run(self, run: _Generation) -> AsyncIterator[str]:
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[str | BaseException | None] = asyncio.Queue()

        def emit(item: str | BaseException | None) -> None:
            loop.call_soon_threadsafe(queue.put_nowait, item)

        work = loop.run_in_executor(self._executor, run.execute, emit)
        try:
            while (item := await queue.get()) is not None:
                if isinstance(item, BaseException):
                    raise ProviderError(f"llama.cpp failed: {item}", provider=self.name) from item
                yield item
        finally:
            run.cancel.set()
            await asyncio.shield(work)


class _Generation:
    """One generation, run in the worker thread; ``emit`` hands text to the event loop."""

    def __init__(
        self, llm: Llama, tokens: list[int], stop: list[str], budget: int, sampling: dict[str, Any]
    ) -> None:
        self.llm = llm
        self.tokens = tokens
        self.stop = stop
        self.budget = budget
        self.sampling = sampling
        self.grammar: LlamaGrammar | None = None
        self.prefix: list[int] = []
        self.cache: PrefixCache | None = None
        self.cancel = threading.Event()
        self.stats = GenerationStats(prompt_tokens=len(tokens))
        self.hit_limit = False

    def execute(self, emit: Callable[[str | BaseException | None], None]) -> None:
        import llama_cpp

        try:
            llama_cpp.llama_perf_context_reset(self.llm.ctx)
            if self.cache is not None:
                self.stats.prefix_cache = self.cache.prepare(self.llm, self.prefix)
            self.stats.prefix_tokens = len(self.prefix)
            self._generate(emit)
            perf = llama_cpp.llama_perf_context(self.llm.ctx)
            self.stats.evaluated_prompt_tokens = perf.n_p_eval
            self.stats.prompt_ms, self.stats.generation_ms = perf.t_p_eval_ms, perf.t_eval_ms
        except Exception as err:
            emit(err)
        finally:
            emit(None)

    def _generate(self, emit: Callable[[str | BaseException | None], None]) -> None:
        """Generate until an end-of-generation token (any of the model's: SmolLM2 ends a
        finished grammar with ``<|endoftext|>``, not its chat end), a stop string, the budget
        or a cancel."""
        import llama_cpp

        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        vocab = self.llm._model.vocab
        window = max((len(s) for s in self.stop), default=0)
        tail = ""
        for token in self.llm.generate(self.tokens, grammar=self.grammar, **self.sampling):
            if self.cancel.is_set():
                self.stats.tokens_after_cancel += 1
                break
            if llama_cpp.llama_vocab_is_eog(vocab, token):
                break
            self.stats.generated_tokens += 1
            piece = decoder.decode(self.llm.detokenize([token]))
            tail = (tail + piece)[-(window + len(piece)) :]
            if window and any(s in tail for s in self.stop):
                break
            if piece:
                emit(piece)
            if self.stats.generated_tokens >= self.budget:
                self.hit_limit = True
                break


def _log_stats(stats: GenerationStats, seconds: float) -> None:
    """One debug line per call, from llama.cpp's own counters: where the time went."""
    log.debug(
        "llama.cpp: prompt %d tokens (prefix %d, cache %s), evaluated %d in %.0f ms; "
        "generated %d tokens in %.0f ms; call %.0f ms (the rest: loading, sampling, grammar)",
        stats.prompt_tokens,
        stats.prefix_tokens,
        stats.prefix_cache,
        stats.evaluated_prompt_tokens,
        stats.prompt_ms,
        stats.generated_tokens,
        stats.generation_ms,
        seconds * 1000,
    )


def _chat_messages(request: ModelRequest) -> list[dict[str, str]]:
    """Plain role/content messages: tool blocks are rendered as text (models without native
    tool calling get them through the envelope protocol)."""
    out = [{"role": "system", "content": request.system}] if request.system else []
    for message in request.messages:
        out.append({"role": message.role, "content": _text_of(message)})
    return out


def _text_of(message: Message) -> str:
    parts = []
    for block in message.content:
        if isinstance(block, TextBlock):
            parts.append(block.text)
        elif not isinstance(block, ThinkingBlock):
            parts.append(json.dumps({k: v for k, v in _plain(block).items() if k != "kind"}))
    return "\n".join(parts)


def _plain(block: object) -> dict[str, Any]:
    from openheim.messages import block_to_dict

    return block_to_dict(block)  # type: ignore[arg-type]


def _prefix(llm: Llama, request: ModelRequest, tokens: list[int]) -> list[int]:
    """The tokens ``tokens`` shares with the system prompt formatted alone: the prefix every
    call with this system prompt starts with."""
    if not request.system:
        return []
    alone = ModelRequest(model=request.model, messages=(), system=request.system)
    system, _ = _prompt_tokens(llm, alone)
    shared = 0
    for a, b in zip(system, tokens, strict=False):
        if a != b:
            break
        shared += 1
    return tokens[:shared]


def _prompt_tokens(llm: Llama, request: ModelRequest) -> tuple[list[int], list[str]]:
    """The request's tokens in the model's chat template, and its stop strings. A last message
    from the assistant is an answer started for the model: the reply continues it."""
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    meta = llm.metadata
    template = meta.get("tokenizer.chat_template")
    if not template:
        raise ConfigError(
            "this GGUF model has no chat template", hint="use an instruction-tuned chat model"
        )
    vocab_token = llm._model.token_get_text
    eos = vocab_token(llm.token_eos())
    bos = vocab_token(llm.token_bos())
    formatter = Jinja2ChatFormatter(template, eos, bos)
    messages = _chat_messages(request)
    started = messages.pop()["content"] if messages and messages[-1]["role"] == "assistant" else ""
    formatted = formatter(messages=messages)  # type: ignore[arg-type]
    add_bos = not formatted.added_special
    prompt = formatted.prompt + started
    tokens = llm.tokenize(utf8(prompt), add_bos=add_bos, special=True)
    stop = formatted.stop if isinstance(formatted.stop, list) else [formatted.stop or eos]
    return tokens, [s for s in stop if s]
