#!/usr/bin/env python3
"""Train the tiny tokenizers the LLM tests use, and record what the reference libraries make of them.

    .venv/bin/python tools/llm/make_test_tokenizers.py [OUT_DIR]   (default tests/fixtures/llm/tokenizers)

Writes, from the committed corpus.txt next to the output (text written for these tests):
  bpe/  a Llama-3-like byte-level BPE `tokenizer.json` (Hugging Face `tokenizers`): vocab 512, the Llama 3
        pre-tokenizer regex, <|begin_of_text|> added in front by the post-processor, the special tokens at the
        end of the vocabulary as in Llama 3; `tokenizer_config.json` (Llama 3's chat template) and
        `generation_config.json` (two stop tokens).
  spm/  a Llama-2-like SentencePiece BPE `tokenizer.model` (byte fallback, <unk> <s> </s> = 0 1 2), vocab 512,
        with its `tokenizer_config.json`.
  each: `encodings.json`, for every string of TEST_STRINGS the ids the reference library gives without and
        with the BOS token and the text it decodes them to.

Training is deterministic (single thread), so rerunning rewrites the same files. The C++ tests read only the
committed output; python is needed only to regenerate it (pip install tokenizers sentencepiece).
"""
import json
import sys
from pathlib import Path

import sentencepiece as spm
from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, processors, trainers

VOCAB_SIZE = 512

# Llama 3's pre-tokenizer split (tokenizer.json of Meta-Llama-3-8B).
LLAMA3_SPLIT = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
LLAMA3_SPECIAL = ["<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"]
LLAMA3_CHAT_TEMPLATE = (
    "{% set loop_messages = messages %}{% for message in loop_messages %}"
    "{% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'"
    "+ message['content'] | trim + '<|eot_id|>' %}"
    "{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}{{ content }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}"
)
LLAMA2_CHAT_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}{% if message['role'] == 'user' %}"
    "{{ '[INST] ' + message['content'] | trim + ' [/INST]' }}"
    "{% elif message['role'] == 'assistant' %}{{ ' ' + message['content'] | trim + ' ' + eos_token }}"
    "{% endif %}{% endfor %}"
)

TEST_STRINGS = [
    "Hello, world!",
    "The quick brown fox jumps over the lazy dog.",
    "a",
    " leading space",
    "trailing space ",
    "It's what they've built; we'll see what I'm told.",
    "Numbers: 7, 42, 1234567, 3.14159, -0.5e-3",
    "Punctuation!?... (a) [b] {c} <d> a/b a\\b a|b #@%^&*~",
    "spaces:   three,      six, tab\there, tabs\t\tend",
    "line one\nline two\n\nafter a blank line\r\nwindows line",
    "    def f(x):\n        return x * 2\n",
    "Café naïve résumé façade jalapeño Zürich crème brûlée",
    "Ελληνικά και русский текст",
    "日本語の文章です。中文句子：今天天气很好。",
    "한국어 문장",
    "Emoji: 😀🚀 👍 👩‍💻 🇫🇷 ❤️",
    "Rare: ☃ ∮ ℵ ꙮ 𝔘𝔫𝔦𝔠𝔬𝔡𝔢",
    "<|begin_of_text|>Hi<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\nHello<|end_of_text|>",
    "<s>[INST] tags in text [/INST]</s>",
    "A longer sentence: the cache keeps the keys and values of every past token, so each step computes one row.",
    "",
]


def train_bpe(corpus: Path, out: Path) -> Tokenizer:
    tok = Tokenizer(models.BPE(byte_fallback=False))
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(LLAMA3_SPLIT), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=False),
        ]
    )
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE - len(LLAMA3_SPECIAL),
        min_frequency=1,
        show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        special_tokens=[],
    )
    tok.train([str(corpus)], trainer)
    # As in Llama 3: the special tokens come after the learnt vocabulary.
    tok.add_special_tokens(LLAMA3_SPECIAL)
    bos = LLAMA3_SPECIAL[0]
    tok.post_processor = processors.TemplateProcessing(
        single=f"{bos} $A", pair=f"{bos} $A {bos} $B", special_tokens=[(bos, tok.token_to_id(bos))]
    )
    assert tok.get_vocab_size() == VOCAB_SIZE, tok.get_vocab_size()
    out.mkdir(parents=True, exist_ok=True)
    tok.save(str(out / "tokenizer.json"), pretty=True)
    write_json(
        out / "tokenizer_config.json",
        {
            "tokenizer_class": "PreTrainedTokenizerFast",
            "bos_token": "<|begin_of_text|>",
            "eos_token": "<|eot_id|>",
            "add_bos_token": True,
            "model_max_length": 512,
            "chat_template": LLAMA3_CHAT_TEMPLATE,
        },
    )
    write_json(
        out / "generation_config.json",
        {
            "bos_token_id": tok.token_to_id("<|begin_of_text|>"),
            "eos_token_id": [tok.token_to_id("<|end_of_text|>"), tok.token_to_id("<|eot_id|>")],
        },
    )
    return tok


def train_spm(corpus: Path, out: Path) -> spm.SentencePieceProcessor:
    out.mkdir(parents=True, exist_ok=True)
    spm.SentencePieceTrainer.train(
        input=str(corpus),
        model_prefix=str(out / "tokenizer"),
        model_type="bpe",
        vocab_size=VOCAB_SIZE,
        byte_fallback=True,
        character_coverage=0.98,
        split_digits=True,
        allow_whitespace_only_pieces=True,
        remove_extra_whitespaces=False,
        normalization_rule_name="identity",
        unk_id=0,
        bos_id=1,
        eos_id=2,
        pad_id=-1,
        hard_vocab_limit=True,
        num_threads=1,
        minloglevel=2,
    )
    (out / "tokenizer.vocab").unlink()
    write_json(
        out / "tokenizer_config.json",
        {
            "tokenizer_class": "LlamaTokenizer",
            "bos_token": "<s>",
            "eos_token": "</s>",
            "unk_token": "<unk>",
            "add_bos_token": True,
            "add_eos_token": False,
            "chat_template": LLAMA2_CHAT_TEMPLATE,
        },
    )
    return spm.SentencePieceProcessor(model_file=str(out / "tokenizer.model"))


def bpe_encodings(tok: Tokenizer) -> dict:
    cases = []
    for text in TEST_STRINGS:
        ids = tok.encode(text, add_special_tokens=False).ids
        cases.append(
            {
                "text": text,
                "ids": ids,
                "ids_with_bos": tok.encode(text, add_special_tokens=True).ids,
                "decoded": tok.decode(ids, skip_special_tokens=False),
            }
        )
    return {
        "library": "tokenizers",
        "bos_id": tok.token_to_id("<|begin_of_text|>"),
        "eos_ids": [tok.token_to_id("<|end_of_text|>"), tok.token_to_id("<|eot_id|>")],
        "vocab_size": tok.get_vocab_size(),
        "cases": cases,
    }


def spm_encodings(sp: spm.SentencePieceProcessor) -> dict:
    cases = []
    for text in TEST_STRINGS:
        ids = sp.encode(text)
        cases.append(
            {"text": text, "ids": ids, "ids_with_bos": [sp.bos_id()] + ids, "decoded": sp.decode(ids)}
        )
    return {
        "library": "sentencepiece",
        "bos_id": sp.bos_id(),
        "eos_ids": [sp.eos_id()],
        "vocab_size": sp.get_piece_size(),
        "cases": cases,
    }


def write_json(path: Path, value) -> None:
    path.write_text(json.dumps(value, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")


def write_encodings(path: Path, value: dict) -> None:
    """Like write_json, one line per case (the id lists stay readable)."""
    head = {k: v for k, v in value.items() if k != "cases"}
    lines = [json.dumps(case, ensure_ascii=False) for case in value["cases"]]
    text = json.dumps(head, ensure_ascii=False, indent=1)[:-2] + ',\n "cases": [\n  ' + ",\n  ".join(lines) + "\n ]\n}\n"
    json.loads(text)
    path.write_text(text, encoding="utf-8")


def main() -> None:
    repo = Path(__file__).resolve().parents[2]
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else repo / "tests/fixtures/llm/tokenizers"
    corpus = repo / "tests/fixtures/llm/tokenizers/corpus.txt"
    bpe = train_bpe(corpus, out / "bpe")
    write_encodings(out / "bpe/encodings.json", bpe_encodings(bpe))
    sp = train_spm(corpus, out / "spm")
    write_encodings(out / "spm/encodings.json", spm_encodings(sp))


if __name__ == "__main__":
    main()
