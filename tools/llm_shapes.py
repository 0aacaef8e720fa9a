"""The shapes of the random-weight benchmark LLMs, shared by tools/export_llm.py (which exports them) and
bench/llm_peer/torch_bench.py (which runs the same shapes in PyTorch). Plain data: no torch, no transformers.
Keys are transformers' LlamaConfig arguments."""

LLAMA32_ROPE = {"rope_type": "llama3", "rope_theta": 500000.0, "factor": 32.0, "high_freq_factor": 4.0,
                "low_freq_factor": 1.0, "original_max_position_embeddings": 8192}
LLAMA31_ROPE = dict(LLAMA32_ROPE, factor=8.0)

SHAPES = {
    # Llama-3.2-1B
    "llama-1b": dict(hidden_size=2048, num_hidden_layers=16, num_attention_heads=32, num_key_value_heads=8,
                     head_dim=64, intermediate_size=8192, vocab_size=128256, max_position_embeddings=131072,
                     rms_norm_eps=1e-5, rope_parameters=LLAMA32_ROPE, bos_token_id=128000,
                     eos_token_id=[128001, 128008, 128009], tie_word_embeddings=True),
    # Llama-3.1-8B
    "llama-8b": dict(hidden_size=4096, num_hidden_layers=32, num_attention_heads=32, num_key_value_heads=8,
                     head_dim=128, intermediate_size=14336, vocab_size=128256, max_position_embeddings=131072,
                     rms_norm_eps=1e-5, rope_parameters=LLAMA31_ROPE, bos_token_id=128000,
                     eos_token_id=[128001, 128008, 128009], tie_word_embeddings=False),
}
