"""Make a tiny random Qwen2 model vLLM's CPU build can serve: run with the vLLM venv's python.

    python tests/realengine/make_tiny_model.py OUT_DIR [--head-dim 32] [--layers 2] [--heads 4]
        [--intermediate 256]

2 layers, hidden 128, 4 heads of head_dim 32 (head_dim 16 makes vLLM's CPU attention refuse the
first request), a byte-level BPE tokenizer trained on this repository's own text, a ChatML chat
template, seeded weights: the same folder on every machine, greedy output deterministic. More
layers, heads and a wider MLP make the truly slower model of a known speed pair (the same
tokenizer, so the same prompt and the same tokens; only the work per token grows).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CHATML = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{{ message['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]


def corpus() -> list[str]:
    files = sorted((REPO / "watcher").rglob("*.py")) + [REPO / "README.md"]
    return [f.read_text(encoding="utf-8") for f in files if f.is_file()]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--head-dim", type=int, default=32)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--intermediate", type=int, default=256)
    a = ap.parse_args()
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=2048,
        special_tokens=SPECIAL,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(corpus(), trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        bos_token=None,
    )
    fast.chat_template = CHATML
    fast.save_pretrained(out)
    heads = a.heads
    cfg = Qwen2Config(
        vocab_size=len(fast),
        hidden_size=heads * a.head_dim,
        intermediate_size=a.intermediate,
        num_hidden_layers=a.layers,
        num_attention_heads=heads,
        num_key_value_heads=heads,
        head_dim=a.head_dim,
        max_position_embeddings=2048,
        eos_token_id=fast.convert_tokens_to_ids("<|im_end|>"),
        pad_token_id=fast.convert_tokens_to_ids("<|endoftext|>"),
        bos_token_id=None,
        tie_word_embeddings=True,
        torch_dtype="bfloat16",
    )
    torch.manual_seed(0)
    model = Qwen2ForCausalLM(cfg).to(torch.bfloat16)
    model.save_pretrained(out, safe_serialization=True)
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
