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
  tiktoken/  the BPE's vocabulary as a tiktoken `tokenizer.model`, the format of Meta's original Llama 3
        release (ranks = ids; Llama 3's 256 special tokens follow them), no config files.
  each: `encodings.json`, for every string of TEST_STRINGS and 100 generated ones the ids the reference library (tokenizers,
        sentencepiece, tiktoken) gives without and with the BOS token and the text it decodes them to; and
        for bpe and spm, `chat`: the prompt jinja2 renders from the chat template for one user message,
        as transformers' apply_chat_template(add_generation_prompt=True) does.

Training is deterministic (single thread), so rerunning rewrites the same files. The C++ tests read only the
committed output; python is needed only to regenerate it (pip install tokenizers sentencepiece).
"""
import base64
import json
import random
import re
import sys
from pathlib import Path

import jinja2
import jinja2.sandbox
import sentencepiece as spm
import tiktoken
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
# Llama 2's chat template (meta-llama/Llama-2-7b-chat-hf).
LLAMA2_CHAT_TEMPLATE = (
    "{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}"
    "{% set system_message = messages[0]['content'] %}{% else %}{% set loop_messages = messages %}"
    "{% set system_message = false %}{% endif %}{% for message in loop_messages %}"
    "{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}"
    "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}"
    "{% if loop.index0 == 0 and system_message != false %}"
    "{% set content = '<<SYS>>\\n' + system_message + '\\n<</SYS>>\\n\\n' + message['content'] %}"
    "{% else %}{% set content = message['content'] %}{% endif %}"
    "{% if message['role'] == 'user' %}{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}"
    "{% elif message['role'] == 'assistant' %}{{ ' '  + content.strip() + ' ' + eos_token }}{% endif %}{% endfor %}"
)

# Meta's Llama 3.1 special tokens, the ones pytorch/tokenizers' Tiktoken assumes.
LLAMA3_TIKTOKEN_SPECIAL = [
    "<|begin_of_text|>",
    "<|end_of_text|>",
    "<|reserved_special_token_0|>",
    "<|reserved_special_token_1|>",
    "<|finetune_right_pad_id|>",
    "<|step_id|>",
    "<|start_header_id|>",
    "<|end_header_id|>",
    "<|eom_id|>",
    "<|eot_id|>",
    "<|python_tag|>",
] + [f"<|reserved_special_token_{i}|>" for i in range(2, 247)]

# How many generated strings follow TEST_STRINGS (mixed_strings).
MIXED_STRINGS = 100

CHAT_SYSTEM = "You answer in one word."
CHAT_USER = "  What colour is the sky? Ça va? 😀 "

TEST_STRINGS = [
    "Hello, world!",
    "Wow!!! Really?! Hi!!",
    "unbelievable tokenization of Cafés, naïvely",
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


def mixed_strings(corpus: str, count: int) -> list:
    """Deterministic strings mixing corpus snippets with runs of punctuation, spaces and rarer characters:
    many pre-tokens that are not one vocabulary entry, so the merges decide."""
    rng = random.Random(0)
    extra = "!!??..,,;:()[]{}<>/\\|'\"`~@#$%^&*-_=+ \t\n\r  éüñçøß日本語中文한국어😀🚀👍👩‍💻🇫🇷❤️ℵ∮☃\u200b\u00a0"
    strings = []
    for _ in range(count):
        parts = []
        for _ in range(rng.randint(1, 4)):
            if rng.random() < 0.6:
                start = rng.randrange(len(corpus))
                parts.append(corpus[start : start + rng.randint(1, 40)])
            else:
                parts.append("".join(rng.choice(extra) for _ in range(rng.randint(1, 6))))
        strings.append("".join(parts))
    return strings


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


def byte_level_decoder() -> dict:
    """GPT-2's map from the printable characters of byte-level tokens back to bytes."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAC + 1)) + list(range(0xAE, 0xFF + 1))
    chars = printable[:]
    extra = 0
    for b in range(256):
        if b not in printable:
            printable.append(b)
            chars.append(256 + extra)
            extra += 1
    return {chr(c): b for b, c in zip(printable, chars)}


def write_tiktoken(bpe: Tokenizer, out: Path) -> tiktoken.Encoding:
    to_byte = byte_level_decoder()
    specials = set(LLAMA3_SPECIAL)
    ranks = {
        bytes(to_byte[c] for c in token): rank
        for token, rank in bpe.get_vocab(with_added_tokens=False).items()
        if token not in specials
    }
    out.mkdir(parents=True, exist_ok=True)
    lines = [f"{base64.b64encode(token).decode()} {rank}\n" for token, rank in sorted(ranks.items(), key=lambda x: x[1])]
    (out / "tokenizer.model").write_text("".join(lines))
    return tiktoken.Encoding(
        "wgml-test",
        pat_str=LLAMA3_SPLIT,
        mergeable_ranks=ranks,
        special_tokens={token: len(ranks) + i for i, token in enumerate(LLAMA3_TIKTOKEN_SPECIAL)},
    )


def tiktoken_encodings(enc: tiktoken.Encoding) -> dict:
    bos = enc.encode_single_token("<|begin_of_text|>")
    cases = []
    for text in TEST_STRINGS:
        ids = enc.encode(text, allowed_special="all")
        cases.append({"text": text, "ids": ids, "ids_with_bos": [bos] + ids, "decoded": enc.decode(ids)})
    return {
        "library": "tiktoken",
        "bos_id": bos,
        "eos_ids": [enc.encode_single_token(t) for t in ["<|end_of_text|>", "<|eot_id|>", "<|eom_id|>"]],
        "vocab_size": enc.n_vocab,
        "cases": cases,
    }


def chat_prompts(config: dict, encode) -> dict:
    """What transformers' apply_chat_template renders (its Jinja settings) for one user message, and its ids."""
    env = jinja2.sandbox.ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    template = env.from_string(config["chat_template"])
    tokens = {"bos_token": config["bos_token"], "eos_token": config["eos_token"]}
    user = [{"role": "user", "content": CHAT_USER}]
    system = [{"role": "system", "content": CHAT_SYSTEM}]
    prompt = template.render(messages=user, add_generation_prompt=True, **tokens)
    prompt_with_system = template.render(messages=system + user, add_generation_prompt=True, **tokens)
    return {
        "system": CHAT_SYSTEM,
        "user": CHAT_USER,
        "prompt": prompt,
        "prompt_ids": encode(prompt),
        "prompt_with_system": prompt_with_system,
        "prompt_with_system_ids": encode(prompt_with_system),
    }


def legacy_llama_encode(sp: spm.SentencePieceProcessor, text: str) -> list:
    """transformers' Llama tokenizer (legacy=True, Llama 2's setting): <s> and </s> written in the text are
    their tokens, and SentencePiece encodes each piece between them on its own."""
    ids = []
    for part in re.split(r"(<s>|</s>)", text):
        if part in ("<s>", "</s>"):
            ids.append(sp.piece_to_id(part))
        elif part:
            ids += sp.encode(part)
    return ids


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
    TEST_STRINGS.extend(mixed_strings(corpus.read_text(encoding="utf-8"), MIXED_STRINGS))
    bpe = train_bpe(corpus, out / "bpe")
    bpe_chat = chat_prompts(read(out / "bpe"), lambda text: bpe.encode(text, add_special_tokens=False).ids)
    write_encodings(out / "bpe/encodings.json", bpe_encodings(bpe) | {"chat": bpe_chat})
    sp = train_spm(corpus, out / "spm")
    spm_chat = chat_prompts(read(out / "spm"), lambda text: legacy_llama_encode(sp, text))
    write_encodings(out / "spm/encodings.json", spm_encodings(sp) | {"chat": spm_chat})
    enc = write_tiktoken(bpe, out / "tiktoken")
    write_encodings(out / "tiktoken/encodings.json", tiktoken_encodings(enc))


def read(model_dir: Path) -> dict:
    return json.loads((model_dir / "tokenizer_config.json").read_text(encoding="utf-8"))


if __name__ == "__main__":
    main()
