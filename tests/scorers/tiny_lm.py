"""Build a tiny Llama and its BPE tokenizer in a folder, trained for a few steps (no hub, no network)."""

from __future__ import annotations

from pathlib import Path

from curate.io.integrity import write_folder_manifest

CORPUS = ["the cat sat on the mat.", "the dog sat on the log.", "a cat and a dog sat on the mat."]


def build_tiny_lm(folder: Path, *, steps: int = 40, seed: int = 0) -> Path:
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    torch.manual_seed(seed)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # a tiny model: threads only add contention on a shared CPU
    bpe = Tokenizer(models.BPE(unk_token="<unk>"))
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    bpe.train_from_iterator(
        CORPUS * 20,
        trainers.BpeTrainer(
            vocab_size=300,
            special_tokens=["<unk>", "<s>", "</s>", "<pad>"],
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        ),
    )
    tok = PreTrainedTokenizerFast(
        tokenizer_object=bpe, unk_token="<unk>", bos_token="<s>", eos_token="</s>", pad_token="<pad>"
    )
    cfg = LlamaConfig(
        vocab_size=len(tok),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=256,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
    )
    model = LlamaForCausalLM(cfg)
    batch = tok([" ".join(CORPUS * 2)] * 2, return_tensors="pt")
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    model.train()
    for _ in range(steps):
        loss = model(**batch, labels=batch["input_ids"]).loss
        loss.backward()
        opt.step()
        opt.zero_grad()
    model.eval()
    torch.set_num_threads(threads)
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    write_folder_manifest(folder)  # synthesize_v1 verifies the folder before loading
    return folder
