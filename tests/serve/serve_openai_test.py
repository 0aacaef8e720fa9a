#!/usr/bin/env python3
"""`wgml serve` through OpenAI's own Python client (docs/serve.md).

Starts `wgml serve MODEL --port 0`, waits for its listening line, then checks /v1/models, a greedy
completion against `wgml generate` on the same prompt, the same streamed, a chat completion streamed
and not, 400s for bad requests (the server lives on), and two requests at once.

  serve_openai_test.py --wgml build/tools/cli/wgml --model tests/fixtures/llm/tiny-llama-fp32/model.pte
"""
import argparse
import concurrent.futures
import json
import re
import subprocess
import sys
import threading
import urllib.error
import urllib.request

import openai

PROMPT = "The quick brown fox"
MAX_TOKENS = 24


def start_server(wgml, model, device):
    server = subprocess.Popen([wgml, "serve", model, "--device", device, "--port", "0"], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    lines = []
    timer = threading.Timer(120, server.kill)  # a server that never listens fails the test, not hangs it
    timer.start()
    for line in server.stdout:
        lines.append(line)
        match = re.fullmatch(r"wgml serve: listening on http://127\.0\.0\.1:(\d+)\n", line)
        if match:
            timer.cancel()
            return server, int(match.group(1))
    timer.cancel()
    sys.exit(f"wgml serve did not print its listening line; stdout: {lines!r}; stderr: {server.stderr.read()!r}")


def generate_text(wgml, model, device):
    done = subprocess.run([wgml, "generate", model, "--device", device, "--prompt", PROMPT, "--max-new-tokens",
                           str(MAX_TOKENS)], capture_output=True, check=True)
    text = done.stdout.decode("utf-8")
    assert text.endswith("\n"), text
    assert len(text) > 1, "wgml generate made no text"
    return text[:-1]  # generate ends the text's line


def check_models(client):
    assert [model.id for model in client.models.list().data] == ["tiny-llama-fp32"]


def check_completion(client, expected):
    response = client.completions.create(model="tiny-llama-fp32", prompt=PROMPT, max_tokens=MAX_TOKENS, temperature=0)
    choice = response.choices[0]
    assert choice.text == expected, (choice.text, expected)
    assert choice.finish_reason in ("stop", "length")
    assert response.object == "text_completion"
    assert response.usage.prompt_tokens > 0 and 0 < response.usage.completion_tokens <= MAX_TOKENS, response.usage
    assert response.usage.total_tokens == response.usage.prompt_tokens + response.usage.completion_tokens
    chunks = list(client.completions.create(model="tiny-llama-fp32", prompt=PROMPT, max_tokens=MAX_TOKENS,
                                            temperature=0, stream=True))
    assert "".join(chunk.choices[0].text for chunk in chunks) == expected
    assert [chunk.choices[0].finish_reason for chunk in chunks][-1] == choice.finish_reason
    assert all(chunk.choices[0].finish_reason is None for chunk in chunks[:-1])


def check_chat(client):
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi!"}]
    response = client.chat.completions.create(model="tiny-llama-fp32", messages=messages, max_tokens=16, temperature=0)
    message = response.choices[0].message
    assert message.role == "assistant" and message.content, message
    assert response.choices[0].finish_reason in ("stop", "length")
    assert response.usage.completion_tokens > 0
    stream = client.chat.completions.create(model="tiny-llama-fp32", messages=messages, max_tokens=16, temperature=0,
                                            stream=True, stream_options={"include_usage": True})
    chunks = list(stream)
    assert chunks[0].choices[0].delta.role == "assistant"
    text = "".join(chunk.choices[0].delta.content or "" for chunk in chunks if chunk.choices)
    assert text == message.content, (text, message.content)
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == response.choices[0].finish_reason
    assert chunks[-1].usage.total_tokens == response.usage.total_tokens


def check_bad_requests(client, port):
    try:
        client.completions.create(model="tiny-llama-fp32", prompt=PROMPT, n=2)
        raise AssertionError("n=2 was accepted")
    except openai.BadRequestError as error:
        assert error.status_code == 400 and error.body["param"] == "n", error.body
    try:
        client.chat.completions.create(model="tiny-llama-fp32", messages=[{"role": "user", "content": "x"}],
                                       temperature=5)
        raise AssertionError("temperature=5 was accepted")
    except openai.BadRequestError as error:
        assert error.body["param"] == "temperature", error.body
    request = urllib.request.Request(f"http://127.0.0.1:{port}/v1/completions", data=b"{not json", method="POST")
    try:
        urllib.request.urlopen(request)
        raise AssertionError("a body that is not JSON was accepted")
    except urllib.error.HTTPError as error:
        assert error.code == 400
        body = json.loads(error.read())
        assert set(body["error"]) == {"message", "type", "param", "code"}, body


def check_concurrent(client):
    prompts = ["Once upon a time", "Hello world"]
    alone = [client.completions.create(model="m", prompt=p, max_tokens=16, temperature=0).choices[0].text for p in prompts]
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        together = list(pool.map(
            lambda p: client.completions.create(model="m", prompt=p, max_tokens=16, temperature=0).choices[0].text,
            prompts))
    assert together == alone, (together, alone)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--wgml", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    expected = generate_text(args.wgml, args.model, args.device)
    server, port = start_server(args.wgml, args.model, args.device)
    try:
        client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="unused", max_retries=0, timeout=120)
        check_models(client)
        check_completion(client, expected)
        check_chat(client)
        check_bad_requests(client, port)
        check_concurrent(client)
        check_models(client)  # still serving after the refusals
        assert server.poll() is None, "the server exited"
    finally:
        server.terminate()
        server.wait(30)
    print("serve_openai_test: all checks passed")


if __name__ == "__main__":
    main()
