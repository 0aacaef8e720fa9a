"""Text generation with an exported causal language model: wgml.Generator, wgml.generate."""

from __future__ import annotations

import dataclasses
import os
import queue
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Union

import numpy as np

from . import _wgml
from .errors import InvalidArgumentError
from .session import Session

Tokenizer = _wgml.Tokenizer
TextStream = _wgml.TextStream


@dataclass
class GenerationOptions:
    """How to generate: ``temperature`` 0 is greedy (argmax); top_k 0 takes every token; top_p is
    the nucleus mass; ``stop_tokens`` end generation after being emitted; ``max_sequence`` is the
    most positions the prompt and new tokens may fill (0: the program's context,
    :attr:`Generator.max_context`; more than it raises :class:`wgml.InvalidArgumentError`).
    Generation ends when they are full (``Generator.stats.stop_reason`` is ``"context_full"``)."""

    max_new_tokens: int = 128
    temperature: float = 0.0
    top_k: int = 0
    top_p: float = 1.0
    seed: int = 0
    stop_tokens: Sequence[int] = field(default_factory=tuple)
    max_sequence: int = 0


_END = object()


class Generator:
    """The token loop of an exported causal LM over a :class:`Session`, as ExecuTorch's LLM runner
    calls it: input 0 token ids [1, T] (int64), input 1 their positions; output 0 logits. The KV
    cache lives in the session's mutable buffers; a prompt is fed in chunks of the program's
    largest token count, then one token per call.

    Raises:
        wgml.InvalidArgumentError: the session's program does not have that signature.
    """

    def __init__(self, session: Session) -> None:
        self.session = session
        self._native = _wgml.Generator(session._native)

    @property
    def max_tokens_per_call(self) -> int:
        """The most tokens one call takes."""
        return self._native.max_tokens_per_call

    @property
    def vocab_size(self) -> int:
        return self._native.vocab_size

    @property
    def position(self) -> int:
        """Tokens in the cache so far: the next call writes at this position."""
        return self._native.position

    @property
    def max_context(self) -> int:
        """The most positions the program's KV cache holds (its ``get_max_ctx_len``, else its KV
        caches' length; 0 when unknown): generation stops there."""
        return self._native.max_context

    @property
    def stats(self) -> _wgml.GenerationStats:
        """Where the last generate()'s time went: prompt and decode tokens per second and more."""
        return self._native.stats

    def generate(self, prompt: Sequence[int], options: GenerationOptions | None = None, **kwargs: Any) -> Iterator[int]:
        """Feeds ``prompt`` (token ids, at least one) after what the cache holds, then yields each
        new token id as it is made (a stop token included). Options come as a
        :class:`GenerationOptions` or as its fields by keyword.

        The model runs on a thread of its own without the GIL, one token ahead of the loop;
        leaving the loop early stops it after the token it is making. The session is busy until
        the loop ends: using it in the loop's body raises :class:`wgml.InvalidArgumentError`.
        """
        self.session._check_usable()
        options = _options(options, kwargs)
        tokens: queue.Queue[Any] = queue.Queue()
        go_on: queue.Queue[bool] = queue.Queue()

        # The model makes at most one token ahead of the loop: each token waits for the loop to
        # take it (go on) or to end (stop), so a loop left early ends generation after the token
        # being made.
        def on_token(token: int) -> bool:
            tokens.put(token)
            return go_on.get()

        def make_tokens() -> None:
            try:
                self._native.generate([int(t) for t in prompt], options.max_new_tokens, options.temperature,
                                      options.top_k, options.top_p, options.seed,
                                      [int(t) for t in options.stop_tokens], options.max_sequence, on_token)
                tokens.put(_END)
            except BaseException as e:  # noqa: B036 - handed to the loop, which raises it
                tokens.put(e)

        worker = threading.Thread(target=make_tokens, name="wgml-generate", daemon=True)
        worker.start()
        try:
            while (item := tokens.get()) is not _END:
                if isinstance(item, BaseException):
                    raise item
                go_on.put(True)
                with self.session._generation_loop():
                    yield item
        finally:
            go_on.put(False)
            worker.join()

    def forward(self, tokens: Sequence[int]) -> np.ndarray:
        """The logits row (float32, vocab_size) after feeding ``tokens`` (at least one)."""
        self.session._check_usable()
        return self._native.forward([int(t) for t in tokens])

    def reset(self) -> None:
        """Forgets the sequence: the next call starts at position 0."""
        self._native.reset()


def _options(options: GenerationOptions | None, overrides: dict[str, Any]) -> GenerationOptions:
    return dataclasses.replace(options or GenerationOptions(), **overrides)


def generate(model: Union[str, os.PathLike[str], Session], prompt: Union[str, Sequence[int]], *,
             tokenizer: Union[str, os.PathLike[str], Tokenizer, None] = None, chat: bool = False, system: str = "",
             device: str = "auto", options: GenerationOptions | None = None, **kwargs: Any) -> Iterator[str]:
    """Generates text from a prompt, yielding it piece by piece as tokens are made.

    Args:
        model: the exported LLM (``.pte``) or a :class:`Session` of it.
        prompt: the text, or its token ids.
        tokenizer: the tokenizer (a :class:`Tokenizer`, or a path to ``tokenizer.json``,
            ``tokenizer.model`` or their directory); default: the model's directory.
        chat: wrap the prompt as one user message in the model's chat format (with ``system``).
        device: for a model path: ``"auto"``, ``"webgpu"`` or ``"cpu"``.
        options, kwargs: :class:`GenerationOptions` (``max_new_tokens=32``, ``temperature=0.7``,
            ...). The stop tokens default to the tokenizer's end-of-sequence tokens, which are not
            printed.

    Yields:
        The text each token completes (whole characters only), then what was held back.
    """
    if isinstance(prompt, str) and not prompt:
        raise InvalidArgumentError("generate: expected a non-empty prompt (text, or token ids)")
    session = model if isinstance(model, Session) else Session(model, device)
    if not isinstance(tokenizer, Tokenizer):
        tokenizer = Tokenizer(str(tokenizer or os.path.dirname(os.path.abspath(session.path))))
    if isinstance(prompt, str):
        ids = tokenizer.chat_prompt(prompt, system) if chat else tokenizer.encode(prompt)
    else:
        ids = [int(t) for t in prompt]
    options = _options(options, kwargs)
    if not options.stop_tokens:
        options.stop_tokens = tuple(tokenizer.eos_ids)
    text = tokenizer.stream(ids)
    for token in Generator(session).generate(ids, options):
        if token in options.stop_tokens:
            break
        if piece := text.push(token):
            yield piece
    if rest := text.flush():
        yield rest
