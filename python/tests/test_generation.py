"""Generation with the LLMs ExecuTorch exports (tests/fixtures/llm) against transformers' greedy
tokens (reference.json: the judge ran in float32 with the program's own weights)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import LLM_FIXTURES

import wgml

LLAMA = LLM_FIXTURES / "tiny-llama-fp32"
REFERENCE = json.loads((LLAMA / "reference.json").read_text())


def test_tokenizer_gives_the_judges_prompt_ids() -> None:
    tokenizer = wgml.Tokenizer(str(LLAMA))
    assert tokenizer.encode(REFERENCE["prompt"]) == REFERENCE["prompt_ids"]
    assert tokenizer.adds_bos and tokenizer.bos_id == REFERENCE["prompt_ids"][0]
    assert tokenizer.eos_ids == [508, 511]
    assert tokenizer.decode(REFERENCE["tokens"]) == REFERENCE["text"]


def test_greedy_tokens_match_transformers(device: str) -> None:
    generator = wgml.Generator(wgml.Session(LLAMA / "model.pte", device))
    tokens = list(generator.generate(REFERENCE["prompt_ids"], max_new_tokens=len(REFERENCE["tokens"])))
    assert tokens == REFERENCE["tokens"]
    assert generator.position == len(REFERENCE["prompt_ids"]) + len(tokens) - 1
    assert generator.stats.generated_tokens == len(tokens)


def test_generate_streams_the_decoded_text() -> None:
    count = 16
    pieces = list(wgml.generate(LLAMA / "model.pte", REFERENCE["prompt"], device="cpu", max_new_tokens=count))
    tokenizer = wgml.Tokenizer(str(LLAMA))
    assert "".join(pieces) == tokenizer.decode(REFERENCE["tokens"][:count])
    assert len(pieces) > 1


def test_leaving_the_loop_early_stops_generation() -> None:
    generator = wgml.Generator(wgml.Session(LLAMA / "model.pte", "cpu"))
    taken = []
    for token in generator.generate(REFERENCE["prompt_ids"], max_new_tokens=64):
        taken.append(token)
        if len(taken) == 3:
            break
    assert taken == REFERENCE["tokens"][:3]
    # The model was one token ahead of the loop, and made no more.
    assert generator.stats.generated_tokens == 4


def test_the_session_cannot_run_inside_its_generation_loop() -> None:
    session = wgml.Session(LLAMA / "model.pte", "cpu")
    with pytest.raises(wgml.InvalidArgumentError, match="generating"):
        for _ in wgml.Generator(session).generate(REFERENCE["prompt_ids"], max_new_tokens=4):
            session.reset()


def test_generation_continues_the_cache_until_reset() -> None:
    generator = wgml.Generator(wgml.Session(LLAMA / "model.pte", "cpu"))
    prompt = REFERENCE["prompt_ids"]
    assert len(list(generator.generate(prompt[:6], max_new_tokens=1))) == 1  # sampled, not fed
    assert generator.position == 6
    assert list(generator.generate(prompt[6:], max_new_tokens=4)) == REFERENCE["tokens"][:4]
    generator.reset()
    assert list(generator.generate(prompt, max_new_tokens=4)) == REFERENCE["tokens"][:4]


def test_forward_gives_the_judges_logits() -> None:
    generator = wgml.Generator(wgml.Session(LLAMA / "model.pte", "cpu"))
    logits = generator.forward(np.load(LLAMA / "prefill_input_ids.npy").reshape(-1).tolist())
    want = np.load(LLAMA / "prefill_expected_last_logits.npy").reshape(-1)
    assert logits.dtype == np.float32 and logits.shape == (generator.vocab_size,)
    np.testing.assert_allclose(logits, want, atol=1e-4)


def test_a_program_of_another_signature_is_refused() -> None:
    session = wgml.Session(LLM_FIXTURES.parent / "pte" / "attention_block" / "model.pte", "cpu")
    with pytest.raises(wgml.InvalidArgumentError):
        wgml.Generator(session)
